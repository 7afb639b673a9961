//! Files through the ring: open, positioned writes and reads with owned buffers, sync,
//! and a read that is cancelled and gives its buffer back.
//!
//! ```sh
//! cargo run -p ringway --example files
//! ```

use ringway::fs::{File, OpenOptions};

#[ringway::main]
async fn main() -> std::io::Result<()> {
    let path = std::env::temp_dir().join(format!("ringway-example-files-{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .await?;

    // Owned buffers go in and come back with the result.
    let (r, _) = file.write_all_at(b"hello, ".to_vec(), 0).await;
    r?;
    let (r, _) = file.write_all_at(b"files".to_vec(), 7).await;
    r?;
    file.sync_data().await?;
    println!("{} bytes on disk", file.metadata()?.len());

    let (r, buf) = file.read_at(vec![0u8; 64], 0).await;
    println!("read {:?}", String::from_utf8_lossy(&buf[..r?]));
    let (r, buf) = file.read_at(vec![0u8; 4], 7).await;
    println!("read at 7: {:?}", String::from_utf8_lossy(&buf[..r?]));

    // `cancel` keeps the future: awaiting it returns the buffer, with ECANCELED if the
    // cancel won or the real result if the read finished first.
    let mut read = file.read_at(vec![0u8; 64], 0);
    read.cancel();
    let (r, buf) = read.await;
    println!(
        "cancelled read: {:?}, buffer of {} bytes back",
        r.map_err(|e| e.to_string()),
        buf.capacity()
    );

    drop(File::open(&path).await?);
    ringway::fs::remove_file(&path).await?;
    Ok(())
}
