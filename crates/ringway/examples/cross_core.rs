//! Cross-core spawn: tasks never migrate, so work goes to a core by building its
//! future there (`Handle::spawn_on`); only the closure and the output cross threads.
//! The wake-up goes through the target core's inject queue and, if it sleeps, its
//! eventfd.
//!
//! ```sh
//! cargo run -p ringway --example cross_core
//! ```

use std::rc::Rc;

use ringway::Runtime;

fn main() -> std::io::Result<()> {
    let rt = Runtime::builder().worker_threads(3).build()?;
    println!("{} cores, backend {}", rt.cores(), rt.backend());
    let handle = rt.handle();
    rt.block_on(async move {
        // One task per core; each may hold !Send state (an Rc) because it never moves.
        let per_core = handle.spawn_on_each(|core| async move {
            let local = Rc::new(core * 100);
            ringway::runtime::yield_now().await;
            (ringway::runtime::current_core(), *local)
        });
        for h in per_core {
            let (core, value) = h.await.unwrap();
            println!("core {core} computed {value}");
        }

        // A chain: core 1 asks core 2, which answers back through the join handle.
        let h2 = handle.clone();
        let answer = handle
            .spawn_on(1, move || async move {
                let inner = h2.spawn_on(2, || async { ringway::runtime::current_core() * 7 });
                inner.await.unwrap() + ringway::runtime::current_core()
            })
            .await
            .unwrap();
        println!("core 2 said 14, core 1 added 1: {answer}");
    });
    Ok(())
}
