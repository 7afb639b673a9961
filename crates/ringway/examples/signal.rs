//! Signals as streams: a listener for `SIGUSR1` on each of two cores, then a graceful
//! stop on ctrl-c. The example signals itself (with `kill`, run through
//! `ringway::process`), so it ends by itself; press ctrl-c instead to stop it early.
//!
//! ```sh
//! cargo run -p ringway --example signal
//! ```

use std::time::Duration;

use ringway::process::Command;
use ringway::signal::{ctrl_c, signal, SignalKind};

#[ringway::main(threads = 2)]
async fn main() -> std::io::Result<()> {
    // Listen first (on every core), then send: a signal nobody listens for yet would
    // take its default action.
    let handle = ringway::Handle::current();
    let listeners = handle.spawn_on_each(|core| async move {
        let mut usr1 = signal(SignalKind::user_defined1())?;
        usr1.recv().await;
        println!("core {core}: got SIGUSR1");
        Ok::<_, std::io::Error>(())
    });
    let stop = ringway::spawn(ctrl_c());
    ringway::time::sleep(Duration::from_millis(20)).await; // the listeners are armed

    let pid = std::process::id().to_string();
    Command::new("kill").args(["-USR1", &pid]).status().await?;
    for l in listeners {
        l.await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
    }

    // What a server does at ctrl-c: stop accepting, drain, exit.
    Command::new("kill").args(["-INT", &pid]).status().await?;
    stop.await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    println!("ctrl-c: shutting down");

    // A signal that cannot be listened for says why.
    let e = signal(SignalKind::from_raw(libc::SIGKILL)).unwrap_err();
    println!("{e}");
    Ok(())
}
