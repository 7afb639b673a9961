//! Code generation for `#[ringway::main]` and `#[ringway::test]`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, Block, ItemFn, Visibility};

use crate::args::{self, Backend, Macro, Settings};

/// The message of the panic when the runtime cannot be built.
const BUILD_FAILED: &str = "ringway: failed to start the runtime";

/// Expands `#[ringway::main(args)] item`.
pub(crate) fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Macro::Main, args, item)
}

/// Expands `#[ringway::test(args)] item`.
pub(crate) fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Macro::Test, args, item)
}

/// Checks the function and the arguments, then generates the code.
///
/// On error the output still contains an item, so that the error is not
/// drowned in follow-up errors: a function that was refused is emitted
/// unchanged, and a valid function with bad arguments is expanded with the
/// default settings.
fn expand(mac: Macro, args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &item,
                format!("#[{}] can only be applied to an `async fn`", mac.name()),
            );
            return with_error(item, e);
        }
    };
    match (check_function(mac, &func), args::parse(mac, args)) {
        (Ok(()), Ok(settings)) => generate(mac, &settings, &func),
        (Ok(()), Err(e)) => {
            let mut out = generate(mac, &Settings::default(), &func);
            out.extend(e.to_compile_error());
            out
        }
        (Err(mut e), settings) => {
            if let Err(more) = settings {
                e.combine(more);
            }
            with_error(item, e)
        }
    }
}

/// `compile_error!`s for `e`, followed by `item`.
fn with_error(item: TokenStream, e: syn::Error) -> TokenStream {
    let mut out = e.to_compile_error();
    out.extend(item);
    out
}

/// Refuses functions the attribute cannot turn into a sync entry point:
/// not `async`, taking parameters, generic, or (for tests) already `#[test]`.
pub(crate) fn check_function(mac: Macro, func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    let name = mac.name();
    let mut errors = Vec::new();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span(),
            format!("#[{name}] requires an `async fn`; add `async` before `fn`"),
        ));
    }
    if !sig.inputs.is_empty() || sig.variadic.is_some() {
        errors.push(syn::Error::new(
            sig.paren_token.span.join(),
            format!("#[{name}] functions cannot take parameters"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!("#[{name}] functions cannot be generic"),
        ));
    }
    if mac == Macro::Test {
        if let Some(attr) = func.attrs.iter().find(|a| is_test_attribute(a)) {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[ringway::test] already adds #[test]; remove this attribute",
            ));
        }
    }
    let mut errors = errors.into_iter();
    match errors.next() {
        None => Ok(()),
        Some(mut first) => {
            errors.for_each(|e| first.combine(e));
            Err(first)
        }
    }
}

/// `#[test]`, `#[core::prelude::v1::test]`, `#[::std::prelude::rust_2021::test]`...
fn is_test_attribute(attr: &Attribute) -> bool {
    let segments = &attr.path().segments;
    let Some(last) = segments.last() else {
        return false;
    };
    last.ident == "test"
        && (segments.len() == 1
            || (segments[0].ident == "core" || segments[0].ident == "std")
                && segments.iter().any(|s| s.ident == "prelude"))
}

/// Generates the code for a checked function.
fn generate(mac: Macro, settings: &Settings, func: &ItemFn) -> TokenStream {
    match mac {
        Macro::Main => sync_fn(func, &func.vis, &func.sig.ident, false, settings),
        Macro::Test if settings.both => both_backends(settings, func),
        Macro::Test => sync_fn(
            func,
            &func.vis,
            &func.sig.ident,
            true,
            &test_settings(settings),
        ),
    }
}

/// The settings of a test: one worker thread unless told otherwise.
fn test_settings(settings: &Settings) -> Settings {
    Settings {
        threads: Some(settings.threads.unwrap_or(1)),
        ..settings.clone()
    }
}

/// `::ringway::Runtime::builder()` + the requested settings +
/// `.build().expect(..)`, located at `span`.
pub(crate) fn runtime(settings: &Settings, span: Span) -> TokenStream {
    let threads = settings.threads.map(|n| {
        let mut n = Literal::usize_unsuffixed(n);
        n.set_span(span);
        quote_spanned!(span=> .worker_threads(#n))
    });
    let backend = settings.backend.map(|b| {
        let variant = Ident::new(b.variant(), span);
        quote_spanned!(span=> .backend(::ringway::Backend::#variant))
    });
    let pin = settings.pin.map(|p| {
        let p = syn::LitBool::new(p, span);
        quote_spanned!(span=> .pin_threads(#p))
    });
    quote_spanned! {span=>
        ::ringway::Runtime::builder()
            #threads
            #backend
            #pin
            .build()
            .expect(#BUILD_FAILED)
    }
}

/// Where the `block_on` call is located: at the body's last statement (or
/// closing brace), so that a body whose value does not match the return type
/// is reported there rather than at the attribute. Name resolution and lint
/// attribution stay those of the macro's call site.
fn body_span(block: &Block) -> Span {
    let at = match block.stmts.last() {
        Some(stmt) => stmt.span(),
        None => block.brace_token.span.close(),
    };
    Span::call_site().located_at(at)
}

/// The sync function `vis fn name` with the attributes and return type of
/// `func`, whose body blocks on `func`'s body with a runtime built with
/// `settings`.
fn sync_fn(
    func: &ItemFn,
    vis: &Visibility,
    name: &Ident,
    test: bool,
    settings: &Settings,
) -> TokenStream {
    let ItemFn {
        attrs, sig, block, ..
    } = func;
    let mut sig = sig.clone();
    sig.asyncness = None;
    sig.ident = name.clone();
    // A path, not `#[test]`: a `use ringway::test;` at the call site would
    // otherwise make `#[test]` resolve to this very macro.
    let test = test.then(|| quote!(#[::core::prelude::v1::test]));
    let span = body_span(block);
    let runtime = runtime(settings, span);
    let body = quote_spanned! {span=>
        #runtime.block_on(async move #block)
    };
    quote! {
        #test
        #(#attrs)*
        #vis #sig {
            #body
        }
    }
}

/// `#[ringway::test(both)]`: a module named after the function holding the
/// tests `uring` and `epoll`, each running the body with that backend.
fn both_backends(settings: &Settings, func: &ItemFn) -> TokenStream {
    let tests = [(Backend::Uring, "uring"), (Backend::Epoll, "epoll")].map(|(backend, name)| {
        let settings = Settings {
            backend: Some(backend),
            ..test_settings(settings)
        };
        let name = format_ident!("{}", name);
        sync_fn(func, &Visibility::Inherited, &name, true, &settings)
    });
    let vis = &func.vis;
    let name = &func.sig.ident;
    let mut out = quote! {
        #[allow(unused_imports)]
        use super::*;
    };
    for t in tests {
        t.to_tokens(&mut out);
    }
    quote! {
        #vis mod #name {
            #out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    /// Normalizes token spacing so that expansions compare as source text.
    fn source(tokens: TokenStream) -> String {
        let file: syn::File = syn::parse2(tokens).expect("expansion should parse as items");
        file.to_token_stream().to_string()
    }

    fn assert_expands(actual: TokenStream, expected: TokenStream) {
        assert_eq!(source(actual), source(expected));
    }

    #[test]
    fn non_async_fn_is_refused() {
        let func: ItemFn = parse_quote!(
            fn main() {}
        );
        let msg = check_function(Macro::Main, &func).unwrap_err().to_string();
        assert_eq!(
            msg,
            "#[ringway::main] requires an `async fn`; add `async` before `fn`"
        );
        let msg = check_function(Macro::Test, &func).unwrap_err().to_string();
        assert!(
            msg.starts_with("#[ringway::test] requires an `async fn`"),
            "{msg}"
        );
    }

    #[test]
    fn parameters_and_generics_are_refused() {
        let func: ItemFn = parse_quote!(
            async fn main(x: u32) {}
        );
        let msg = check_function(Macro::Main, &func).unwrap_err().to_string();
        assert_eq!(msg, "#[ringway::main] functions cannot take parameters");
        let func: ItemFn = parse_quote!(
            async fn main<T>() {}
        );
        let msg = check_function(Macro::Main, &func).unwrap_err().to_string();
        assert_eq!(msg, "#[ringway::main] functions cannot be generic");
        let func: ItemFn = parse_quote!(
            async fn main()
            where
                u8: Copy,
            {
            }
        );
        assert!(check_function(Macro::Main, &func).is_err());
    }

    #[test]
    fn all_signature_errors_are_reported() {
        let func: ItemFn = parse_quote!(
            fn main<T>(x: T) {}
        );
        let e = check_function(Macro::Main, &func).unwrap_err();
        assert_eq!(e.into_iter().count(), 3);
    }

    #[test]
    fn test_attribute_twice_is_refused() {
        for func in [
            parse_quote!(
                #[test]
                async fn t() {}
            ),
            parse_quote!(
                #[::core::prelude::v1::test]
                async fn t() {}
            ),
        ] {
            let msg = check_function(Macro::Test, &func).unwrap_err().to_string();
            assert!(msg.contains("already adds #[test]"), "{msg}");
        }
        let func: ItemFn = parse_quote!(
            #[my::test]
            async fn t() {}
        );
        assert!(check_function(Macro::Test, &func).is_ok());
    }

    #[test]
    fn valid_functions_pass() {
        let func: ItemFn = parse_quote!(
            async fn main() -> Result<(), std::io::Error> {
                Ok(())
            }
        );
        assert!(check_function(Macro::Main, &func).is_ok());
        assert!(check_function(Macro::Test, &func).is_ok());
    }

    #[test]
    fn main_without_arguments() {
        let out = main(
            quote!(),
            quote! {
                /// Docs.
                async fn main() {
                    run().await;
                }
            },
        );
        assert_expands(
            out,
            quote! {
                /// Docs.
                fn main() {
                    ::ringway::Runtime::builder()
                        .build()
                        .expect("ringway: failed to start the runtime")
                        .block_on(async move {
                            run().await;
                        })
                }
            },
        );
    }

    #[test]
    fn main_with_all_arguments_and_return_type() {
        let out = main(
            quote!(threads = 4, backend = "uring", pin = true),
            quote! {
                #[allow(unused)]
                async fn main() -> Result<(), Box<dyn std::error::Error>> {
                    run().await?;
                    Ok(())
                }
            },
        );
        assert_expands(
            out,
            quote! {
                #[allow(unused)]
                fn main() -> Result<(), Box<dyn std::error::Error>> {
                    ::ringway::Runtime::builder()
                        .worker_threads(4)
                        .backend(::ringway::Backend::Uring)
                        .pin_threads(true)
                        .build()
                        .expect("ringway: failed to start the runtime")
                        .block_on(async move {
                            run().await?;
                            Ok(())
                        })
                }
            },
        );
    }

    #[test]
    fn main_backend_auto_and_epoll() {
        for (name, variant) in [("auto", quote!(Auto)), ("epoll", quote!(Epoll))] {
            let out = main(
                quote!(backend = #name, pin = false),
                quote!(
                    async fn main() {}
                ),
            );
            assert_expands(
                out,
                quote! {
                    fn main() {
                        ::ringway::Runtime::builder()
                            .backend(::ringway::Backend::#variant)
                            .pin_threads(false)
                            .build()
                            .expect("ringway: failed to start the runtime")
                            .block_on(async move {})
                    }
                },
            );
        }
    }

    #[test]
    fn plain_test() {
        let out = test(
            quote!(),
            quote!(
                #[should_panic(expected = "forwarded")]
                async fn works() {
                    panic!("forwarded");
                }
            ),
        );
        assert_expands(
            out,
            quote! {
                #[::core::prelude::v1::test]
                #[should_panic(expected = "forwarded")]
                fn works() {
                    ::ringway::Runtime::builder()
                        .worker_threads(1)
                        .build()
                        .expect("ringway: failed to start the runtime")
                        .block_on(async move { panic!("forwarded"); })
                }
            },
        );
    }

    #[test]
    fn test_with_arguments() {
        let out = test(
            quote!(threads = 3, backend = "epoll"),
            quote!(
                async fn works() -> std::io::Result<()> {
                    Ok(())
                }
            ),
        );
        assert_expands(
            out,
            quote! {
                #[::core::prelude::v1::test]
                fn works() -> std::io::Result<()> {
                    ::ringway::Runtime::builder()
                        .worker_threads(3)
                        .backend(::ringway::Backend::Epoll)
                        .build()
                        .expect("ringway: failed to start the runtime")
                        .block_on(async move { Ok(()) })
                }
            },
        );
    }

    #[test]
    fn test_on_both_backends() {
        let out = test(
            quote!(both, pin = true),
            quote!(
                pub(crate) async fn echo() {
                    ping().await;
                }
            ),
        );
        assert_expands(
            out,
            quote! {
                pub(crate) mod echo {
                    #[allow(unused_imports)]
                    use super::*;

                    #[::core::prelude::v1::test]
                    fn uring() {
                        ::ringway::Runtime::builder()
                            .worker_threads(1)
                            .backend(::ringway::Backend::Uring)
                            .pin_threads(true)
                            .build()
                            .expect("ringway: failed to start the runtime")
                            .block_on(async move { ping().await; })
                    }

                    #[::core::prelude::v1::test]
                    fn epoll() {
                        ::ringway::Runtime::builder()
                            .worker_threads(1)
                            .backend(::ringway::Backend::Epoll)
                            .pin_threads(true)
                            .build()
                            .expect("ringway: failed to start the runtime")
                            .block_on(async move { ping().await; })
                    }
                }
            },
        );
    }

    #[test]
    fn refused_function_is_emitted_unchanged_after_the_error() {
        let out = main(
            quote!(),
            quote!(
                fn main() {}
            ),
        )
        .to_string();
        assert!(out.starts_with(":: core :: compile_error !"), "{out}");
        assert!(out.contains("requires an `async fn`"), "{out}");
        assert!(out.ends_with("fn main () { }"), "{out}");
    }

    #[test]
    fn bad_arguments_still_expand_with_defaults() {
        let out = main(
            quote!(thread = 2),
            quote!(
                async fn main() {}
            ),
        )
        .to_string();
        assert!(
            out.contains("unknown ringway::main argument `thread`"),
            "{out}"
        );
        assert!(out.contains("block_on"), "{out}");
        assert!(!out.contains("worker_threads"), "{out}");
    }

    #[test]
    fn non_function_is_refused() {
        let out = test(
            quote!(),
            quote!(
                struct S;
            ),
        )
        .to_string();
        assert!(
            out.contains("#[ringway::test] can only be applied to an `async fn`"),
            "{out}"
        );
    }
}
