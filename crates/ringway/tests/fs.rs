//! `ringway::fs` on both backends: whole files, directories made and removed, renames,
//! metadata by path, listings, and the errors of paths that are not there (each
//! naming its path). On io_uring the path operations are ring ops; on epoll they run
//! on the blocking pool (a test below shows the core keeps running meanwhile).

use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use ringway::fs;

/// A fresh directory under the system's temp dir, removed by the test at its end.
fn scratch(name: &str) -> PathBuf {
    let backend = ringway::runtime::current_backend();
    let dir = std::env::temp_dir().join(format!(
        "ringway-fs-{}-{name}-{}",
        std::process::id(),
        if backend.is_uring() { "uring" } else { "epoll" }
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[ringway::test(both)]
async fn whole_files_are_written_read_and_replaced() {
    let dir = scratch("whole");
    fs::create_dir(&dir).await.unwrap();
    let path = dir.join("data.bin");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    fs::write(&path, data.clone()).await.unwrap();
    assert_eq!(fs::read(&path).await.unwrap(), data);
    fs::write(&path, "short".to_string()).await.unwrap(); // truncates
    assert_eq!(fs::read_to_string(&path).await.unwrap(), "short");
    fs::write(&path, Vec::new()).await.unwrap();
    assert_eq!(fs::read(&path).await.unwrap(), b"");
    fs::write(&path, vec![0xff, 0xfe]).await.unwrap();
    let e = fs::read_to_string(&path).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidData);
    fs::remove_dir_all(&dir).await.unwrap();
}

#[ringway::test(both)]
async fn directories_are_made_listed_renamed_and_removed() {
    let dir = scratch("tree");
    let deep = dir.join("a/b/c");
    fs::create_dir_all(&deep).await.unwrap();
    fs::create_dir_all(&deep).await.unwrap(); // already there: fine
    assert!(fs::metadata(&deep).await.unwrap().is_dir());
    for name in ["x.txt", "y.txt", "z.txt"] {
        fs::write(deep.join(name), name.as_bytes().to_vec())
            .await
            .unwrap();
    }
    let mut names = Vec::new();
    let mut list = fs::read_dir(&deep).await.unwrap();
    while let Some(entry) = list.next_entry().await.unwrap() {
        assert!(entry.file_type().is_file());
        assert_eq!(entry.metadata().await.unwrap().len(), 5);
        names.push(entry.file_name().into_string().unwrap());
    }
    names.sort();
    assert_eq!(names, ["x.txt", "y.txt", "z.txt"]);

    fs::rename(deep.join("x.txt"), dir.join("moved.txt"))
        .await
        .unwrap();
    assert_eq!(fs::read(dir.join("moved.txt")).await.unwrap(), b"x.txt");
    assert!(!fs::try_exists(deep.join("x.txt")).await.unwrap());

    let e = fs::remove_dir(&deep).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DirectoryNotEmpty, "{e}");
    fs::remove_file(deep.join("y.txt")).await.unwrap();
    fs::remove_file(deep.join("z.txt")).await.unwrap();
    fs::remove_dir(&deep).await.unwrap();
    assert!(!fs::try_exists(&deep).await.unwrap());
    fs::remove_dir_all(&dir).await.unwrap();
    assert!(!dir.exists());
}

#[ringway::test(both)]
async fn metadata_by_path_matches_std() {
    let dir = scratch("meta");
    fs::create_dir(&dir).await.unwrap();
    let path = dir.join("f");
    fs::write(&path, vec![1u8; 1234]).await.unwrap();
    let m = fs::metadata(&path).await.unwrap();
    let s = std::fs::metadata(&path).unwrap();
    assert!(m.is_file() && !m.is_dir() && !m.is_symlink());
    assert_eq!(m.len(), 1234);
    assert_eq!(m.modified().unwrap(), s.modified().unwrap());
    assert_eq!(m.permissions(), s.permissions());
    let age = SystemTime::now()
        .duration_since(m.modified().unwrap())
        .unwrap();
    assert!(age < Duration::from_secs(60));

    let link = dir.join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(fs::symlink_metadata(&link).await.unwrap().is_symlink());
    assert!(fs::metadata(&link).await.unwrap().is_file(), "followed");
    fs::remove_dir_all(&dir).await.unwrap();
}

#[ringway::test(both)]
async fn a_path_that_is_not_there_is_named_in_the_error() {
    let missing = scratch("missing").join("nope");
    let shown = missing.display().to_string();
    let errors = [
        fs::read(&missing).await.unwrap_err(),
        fs::metadata(&missing).await.unwrap_err(),
        fs::remove_file(&missing).await.unwrap_err(),
        fs::remove_dir(&missing).await.unwrap_err(),
        fs::rename(&missing, scratch("missing-to"))
            .await
            .unwrap_err(),
        fs::create_dir(missing.join("child")).await.unwrap_err(),
        fs::read_dir(&missing).await.unwrap_err(),
        fs::write(missing.join("f"), vec![1]).await.unwrap_err(),
    ];
    for e in errors {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains(&shown), "the path is in {e:?}");
    }
    let e = fs::read("with\0nul").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[ringway::test(both)]
async fn something_in_the_way_is_a_clear_error() {
    let dir = scratch("inway");
    fs::create_dir(&dir).await.unwrap();
    let file = dir.join("file");
    fs::write(&file, vec![0]).await.unwrap();
    let e = fs::create_dir(&file).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    let e = fs::create_dir_all(file.join("below")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory, "{e}");
    let e = fs::read_dir(&file).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory, "{e}");
    fs::remove_dir_all(&dir).await.unwrap();
}

/// On epoll the path work goes to the blocking pool: a task on the core keeps running
/// while many path operations are under way.
#[ringway::test(both)]
async fn path_operations_leave_the_core_free() {
    let dir = scratch("busy");
    fs::create_dir(&dir).await.unwrap();
    let ticks = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let t = ticks.clone();
    let ticker = ringway::spawn(async move {
        loop {
            t.set(t.get() + 1);
            ringway::runtime::yield_now().await;
        }
    });
    for i in 0..50 {
        let p = dir.join(format!("f{i}"));
        fs::write(&p, vec![i as u8; 100]).await.unwrap();
        fs::metadata(&p).await.unwrap();
    }
    assert!(
        ticks.get() >= 50,
        "the core ran other tasks meanwhile ({})",
        ticks.get()
    );
    ticker.abort();
    fs::remove_dir_all(&dir).await.unwrap();
}
