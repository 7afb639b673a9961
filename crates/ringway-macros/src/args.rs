//! Parsing of the attribute arguments (`threads = N`, `backend = "..."`,
//! `pin = b`, and for tests `both`) into [`Settings`].

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Meta, MetaNameValue, Token};

/// Which attribute is being expanded; decides the accepted arguments and the
/// wording of error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Macro {
    Main,
    Test,
}

impl Macro {
    /// The attribute as the user writes it, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Macro::Main => "ringway::main",
            Macro::Test => "ringway::test",
        }
    }

    /// The arguments this attribute accepts, for messages.
    fn expected(self) -> &'static str {
        match self {
            Macro::Main => "threads, backend, pin",
            Macro::Test => "threads, backend, pin, both",
        }
    }
}

/// The I/O backend a runtime is forced to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Uring,
    Epoll,
    Auto,
}

impl Backend {
    /// The spelling accepted in `backend = "..."`.
    pub(crate) fn from_name(name: &str) -> Option<Backend> {
        match name {
            "uring" => Some(Backend::Uring),
            "epoll" => Some(Backend::Epoll),
            "auto" => Some(Backend::Auto),
            _ => None,
        }
    }

    /// The `::ringway::Backend` variant name.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Backend::Uring => "Uring",
            Backend::Epoll => "Epoll",
            Backend::Auto => "Auto",
        }
    }
}

/// The settings requested by the attribute arguments. `None` means "not
/// given": the builder's (or, for tests, the test's) default applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `threads = N`
    pub(crate) threads: Option<usize>,
    /// `backend = "uring" | "epoll" | "auto"`
    pub(crate) backend: Option<Backend>,
    /// `pin = true | false`
    pub(crate) pin: Option<bool>,
    /// `both` (tests only): run the body once per backend.
    pub(crate) both: bool,
}

/// Parses the argument list of `#[ringway::main(...)]` or
/// `#[ringway::test(...)]`. All problems are reported together, each with
/// the span of the offending argument.
pub(crate) fn parse(mac: Macro, args: TokenStream) -> syn::Result<Settings> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut settings = Settings::default();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let mut backend_span = None;
    let mut both_span = None;
    for meta in &metas {
        match parse_one(mac, meta, &mut settings) {
            Ok(Arg::Backend) => backend_span = Some(meta.span()),
            Ok(Arg::Both) => both_span = Some(meta.span()),
            Ok(_) => {}
            Err(e) => push(e),
        }
    }
    if let (Some(span), Some(_)) = (backend_span, both_span) {
        push(syn::Error::new(
            span,
            "`backend` cannot be combined with `both`: `both` already runs \
             the test once with backend \"uring\" and once with \"epoll\"",
        ));
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(settings),
    }
}

/// Which argument a [`Meta`] set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    Threads,
    Backend,
    Pin,
    Both,
}

impl Arg {
    fn name(self) -> &'static str {
        match self {
            Arg::Threads => "threads",
            Arg::Backend => "backend",
            Arg::Pin => "pin",
            Arg::Both => "both",
        }
    }
}

/// Applies one argument to `settings`.
fn parse_one(mac: Macro, meta: &Meta, settings: &mut Settings) -> syn::Result<Arg> {
    let arg = identify(mac, meta)?;
    let duplicate = match arg {
        Arg::Threads => settings.threads.is_some(),
        Arg::Backend => settings.backend.is_some(),
        Arg::Pin => settings.pin.is_some(),
        Arg::Both => settings.both,
    };
    if duplicate {
        return Err(syn::Error::new(
            meta.span(),
            format!("duplicate {} argument `{}`", mac.name(), arg.name()),
        ));
    }
    match arg {
        Arg::Threads => settings.threads = Some(threads_value(mac, name_value(mac, arg, meta)?)?),
        Arg::Backend => settings.backend = Some(backend_value(mac, name_value(mac, arg, meta)?)?),
        Arg::Pin => settings.pin = Some(pin_value(mac, name_value(mac, arg, meta)?)?),
        Arg::Both => {
            if !matches!(meta, Meta::Path(_)) {
                return Err(syn::Error::new(
                    meta.span(),
                    format!(
                        "{} argument `both` takes no value; write `both`",
                        mac.name()
                    ),
                ));
            }
            settings.both = true;
        }
    }
    Ok(arg)
}

/// Maps the argument's name to an [`Arg`], refusing unknown names.
fn identify(mac: Macro, meta: &Meta) -> syn::Result<Arg> {
    let path = meta.path();
    let arg = match path.get_ident().map(|i| i.to_string()).as_deref() {
        Some("threads") => Some(Arg::Threads),
        Some("backend") => Some(Arg::Backend),
        Some("pin") => Some(Arg::Pin),
        Some("both") if mac == Macro::Test => Some(Arg::Both),
        _ => None,
    };
    arg.ok_or_else(|| {
        let written = quote::ToTokens::to_token_stream(path)
            .to_string()
            .replace(' ', "");
        let mut msg = format!(
            "unknown {} argument `{}`; expected one of: {}",
            mac.name(),
            written,
            mac.expected()
        );
        if mac == Macro::Main && written == "both" {
            msg.push_str(" (`both` is only available on #[ringway::test])");
        }
        syn::Error::new(path.span(), msg)
    })
}

/// The value of a `name = value` argument; refuses `name` and `name(...)`.
fn name_value(mac: Macro, arg: Arg, meta: &Meta) -> syn::Result<&Expr> {
    match meta {
        Meta::NameValue(MetaNameValue { value, .. }) => Ok(value),
        _ => Err(syn::Error::new(
            meta.span(),
            format!(
                "{} argument `{}` needs a value: {}",
                mac.name(),
                arg.name(),
                example(arg)
            ),
        )),
    }
}

/// What a correct use of `arg` looks like, for messages.
fn example(arg: Arg) -> &'static str {
    match arg {
        Arg::Threads => "`threads = N` with N a positive integer, e.g. `threads = 4`",
        Arg::Backend => "`backend = \"uring\"`, `backend = \"epoll\"` or `backend = \"auto\"`",
        Arg::Pin => "`pin = true` or `pin = false`",
        Arg::Both => "`both`",
    }
}

/// The error for a value of the wrong kind.
fn bad_value(mac: Macro, arg: Arg, span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "invalid value for {} argument `{}`; expected {}",
            mac.name(),
            arg.name(),
            example(arg)
        ),
    )
}

/// The literal in `value`, if it is one.
fn literal(value: &Expr) -> Option<&Lit> {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        _ => None,
    }
}

fn threads_value(mac: Macro, value: &Expr) -> syn::Result<usize> {
    let Some(Lit::Int(int)) = literal(value) else {
        return Err(bad_value(mac, Arg::Threads, value.span()));
    };
    match int.base10_parse::<usize>() {
        Ok(0) => Err(syn::Error::new(
            int.span(),
            format!("{} argument `threads` must be at least 1", mac.name()),
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(bad_value(mac, Arg::Threads, int.span())),
    }
}

fn backend_value(mac: Macro, value: &Expr) -> syn::Result<Backend> {
    let Some(Lit::Str(s)) = literal(value) else {
        return Err(bad_value(mac, Arg::Backend, value.span()));
    };
    Backend::from_name(&s.value()).ok_or_else(|| bad_value(mac, Arg::Backend, s.span()))
}

fn pin_value(mac: Macro, value: &Expr) -> syn::Result<bool> {
    match literal(value) {
        Some(Lit::Bool(b)) => Ok(b.value),
        _ => Err(bad_value(mac, Arg::Pin, value.span())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn err(mac: Macro, args: TokenStream) -> String {
        parse(mac, args)
            .expect_err("arguments should be refused")
            .to_string()
    }

    #[test]
    fn no_arguments_means_defaults() {
        assert_eq!(parse(Macro::Main, quote!()).unwrap(), Settings::default());
        assert_eq!(parse(Macro::Test, quote!()).unwrap(), Settings::default());
    }

    #[test]
    fn full_main_arguments() {
        let settings = parse(
            Macro::Main,
            quote!(threads = 4, backend = "epoll", pin = true),
        )
        .unwrap();
        assert_eq!(
            settings,
            Settings {
                threads: Some(4),
                backend: Some(Backend::Epoll),
                pin: Some(true),
                both: false
            }
        );
    }

    #[test]
    fn each_backend_and_trailing_comma() {
        for (name, backend) in [
            ("uring", Backend::Uring),
            ("epoll", Backend::Epoll),
            ("auto", Backend::Auto),
        ] {
            let settings = parse(Macro::Main, quote!(backend = #name, pin = false,)).unwrap();
            assert_eq!(settings.backend, Some(backend));
            assert_eq!(settings.pin, Some(false));
        }
    }

    #[test]
    fn test_accepts_both() {
        let settings = parse(Macro::Test, quote!(both, threads = 2)).unwrap();
        assert_eq!(
            settings,
            Settings {
                threads: Some(2),
                both: true,
                ..Settings::default()
            }
        );
    }

    #[test]
    fn typo_names_the_expected_arguments() {
        let msg = err(Macro::Main, quote!(thread = 4));
        assert_eq!(
            msg,
            "unknown ringway::main argument `thread`; expected one of: threads, backend, pin"
        );
        let msg = err(Macro::Test, quote!(bakend = "epoll"));
        assert_eq!(
            msg,
            "unknown ringway::test argument `bakend`; expected one of: threads, backend, pin, both"
        );
    }

    #[test]
    fn both_is_test_only() {
        let msg = err(Macro::Main, quote!(both));
        assert!(
            msg.starts_with(
                "unknown ringway::main argument `both`; expected one of: threads, backend, pin"
            ),
            "{msg}"
        );
        assert!(msg.contains("only available on #[ringway::test]"), "{msg}");
    }

    #[test]
    fn wrong_values_are_refused() {
        assert!(err(Macro::Main, quote!(threads = "4")).contains("e.g. `threads = 4`"));
        assert!(err(Macro::Main, quote!(threads = 0)).contains("must be at least 1"));
        assert!(err(Macro::Main, quote!(threads = -2)).contains("positive integer"));
        assert!(err(Macro::Main, quote!(threads)).contains("needs a value"));
        assert!(err(Macro::Main, quote!(backend = "io_uring")).contains(r#"`backend = "uring"`"#));
        assert!(err(Macro::Main, quote!(backend = uring)).contains(r#"`backend = "uring"`"#));
        assert!(err(Macro::Main, quote!(pin = "yes")).contains("`pin = true` or `pin = false`"));
        assert!(err(Macro::Test, quote!(both = true)).contains("takes no value"));
    }

    #[test]
    fn duplicates_and_conflicts_are_refused() {
        assert_eq!(
            err(Macro::Main, quote!(pin = true, pin = false)),
            "duplicate ringway::main argument `pin`"
        );
        assert!(err(Macro::Test, quote!(both, backend = "epoll"))
            .contains("cannot be combined with `both`"));
    }

    #[test]
    fn every_error_is_reported() {
        let e = parse(Macro::Main, quote!(thread = 1, pin = 3)).unwrap_err();
        let msgs: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].starts_with("unknown ringway::main argument `thread`"));
        assert!(msgs[1].contains("argument `pin`"));
    }

    #[test]
    fn syntax_errors_are_refused() {
        assert!(parse(Macro::Main, quote!(threads = 4 pin = true)).is_err());
        assert!(parse(Macro::Main, quote!(4)).is_err());
    }
}
