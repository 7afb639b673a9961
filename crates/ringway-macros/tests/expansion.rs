//! End-to-end: the generated tests compile and run against a stand-in
//! `ringway` crate (see `support`), and the settings reach the builder.

extern crate self as ringway;

mod support;
pub use support::*;

async fn seven() -> u32 {
    7
}

#[ringway_macros::test]
async fn default_test_runtime_is_single_threaded() {
    assert_eq!(seven().await, 7);
    assert_eq!(
        current(),
        Config {
            threads: Some(1),
            backend: None,
            pin: None
        }
    );
}

#[ringway_macros::test(threads = 3, backend = "auto", pin = false)]
async fn arguments_reach_the_builder() {
    assert_eq!(
        current(),
        Config {
            threads: Some(3),
            backend: Some(Backend::Auto),
            pin: Some(false)
        }
    );
}

#[ringway_macros::test(backend = "epoll")]
async fn question_mark_in_a_test_body() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = "42".parse()?;
    assert_eq!(n + seven().await, 49);
    assert_eq!(current().backend, Some(Backend::Epoll));
    Ok(())
}

#[ringway_macros::test]
#[should_panic(expected = "boom")]
async fn attributes_are_kept() {
    panic!("boom");
}

#[ringway_macros::test(both, threads = 2)]
async fn on_both_backends() {
    // The body sees the items of the enclosing module through `use super::*`.
    assert_eq!(seven().await, 7);
    let config = current();
    assert_eq!(config.threads, Some(2));
    // Each generated test runs its own backend: libtest names the thread after the
    // test (`on_both_backends::uring` / `::epoll`), so the body can tell which it is.
    let name = std::thread::current()
        .name()
        .unwrap_or_default()
        .to_string();
    let expected = match name.rsplit("::").next() {
        Some("uring") => Backend::Uring,
        Some("epoll") => Backend::Epoll,
        _ => panic!("not one of the generated tests: {name:?}"),
    };
    assert_eq!(config.backend, Some(expected), "{name}");
    assert!(
        module_path!().ends_with("::on_both_backends"),
        "{}",
        module_path!()
    );
}

#[ringway_macros::main(threads = 4, backend = "uring", pin = true)]
async fn entry() -> Result<Config, std::num::ParseIntError> {
    let _: u8 = "1".parse()?;
    Ok(current())
}

#[test]
fn main_expansion_blocks_on_the_body() {
    assert_eq!(
        entry().unwrap(),
        Config {
            threads: Some(4),
            backend: Some(Backend::Uring),
            pin: Some(true)
        }
    );
}

/// `use ringway::test;` followed by `#[test]` must not make the generated
/// test attribute resolve back to the macro.
mod imported_as_test {
    use ringway_macros::test;

    #[test]
    async fn works_when_imported_as_test() {
        assert_eq!(super::current().threads, Some(1));
    }
}
