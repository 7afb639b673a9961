//! Child processes: output, piped stdin and stdout as ringway streams, kill, and the
//! error of a program that does not exist.
//!
//! ```sh
//! cargo run -p ringway --example process
//! ```

use ringway::process::{Command, Stdio};

#[ringway::main]
async fn main() -> std::io::Result<()> {
    // Run to the end, collecting what it wrote.
    let out = Command::new("sh")
        .args(["-c", "echo hello from $0; echo to stderr >&2; exit 3"])
        .output()
        .await?;
    println!(
        "exit {:?}, stdout {:?}, stderr {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A filter: write its stdin, read its stdout, both through the ring.
    let mut upper = Command::new("tr")
        .args(["a-z", "A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = upper.stdin.take().expect("piped");
    let (r, _) = stdin.write_all(b"shout this\n".to_vec()).await;
    r?;
    drop(stdin); // end of input: tr finishes
    let mut stdout = upper.stdout.take().expect("piped");
    let text = stdout.read_to_end(Vec::new()).await?;
    println!(
        "tr said {:?}, {}",
        String::from_utf8_lossy(&text),
        upper.wait().await?
    );

    // Kill a child that would run for a minute.
    let mut sleeper = Command::new("sleep").arg("60").spawn()?;
    println!("sleep runs as pid {:?}", sleeper.id());
    println!("killed: {}", sleeper.kill().await?);

    // A program that is not there: a clear error, naming it.
    match Command::new("no-such-program").spawn() {
        Ok(_) => unreachable!("no such program"),
        Err(e) => println!("{e} ({:?})", e.kind()),
    }
    Ok(())
}
