//! Files and directories: a tree made, written, listed, renamed, measured and removed.
//! On io_uring every step is an op in the ring; on epoll (`RINGWAY_BACKEND=epoll`) the
//! same calls run on the blocking pool, so the core never waits for the disk.
//!
//! ```sh
//! cargo run -p ringway --example fs
//! ```

use ringway::fs;

#[ringway::main]
async fn main() -> std::io::Result<()> {
    let root = std::env::temp_dir().join(format!("ringway-example-fs-{}", std::process::id()));
    let notes = root.join("notes/2026");
    fs::create_dir_all(&notes).await?;
    for (name, text) in [("a.txt", "first"), ("b.txt", "second, longer")] {
        fs::write(notes.join(name), text.to_string()).await?;
    }
    fs::rename(notes.join("a.txt"), notes.join("renamed.txt")).await?;

    let mut dir = fs::read_dir(&notes).await?;
    while let Some(entry) = dir.next_entry().await? {
        let meta = entry.metadata().await?;
        let text = fs::read_to_string(entry.path()).await?;
        println!("{:?}: {} bytes, {text:?}", entry.file_name(), meta.len());
    }

    let m = fs::metadata(&root).await?;
    println!(
        "{} is a directory: {}, mode {:o}",
        root.display(),
        m.is_dir(),
        m.mode() & 0o777
    );

    // A path that is not there: the error names it.
    let e = fs::read(root.join("missing")).await.unwrap_err();
    println!("{e} ({:?})", e.kind());

    fs::remove_dir_all(&root).await?;
    println!("removed: {}", !fs::try_exists(&root).await?);
    Ok(())
}
