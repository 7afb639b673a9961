//! Why a request was refused: the status to answer with and the class it is counted under.
//!
//! Every framing or limit failure in the server becomes one [`HttpError`]; the connection
//! answers with its status (where a response is still possible) and then closes.

use std::fmt;

/// The classes errors are counted under (see [`crate::Stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Malformed request line, header section or body framing (400).
    BadRequest,
    /// Request target longer than the limit (414).
    UriTooLong,
    /// A field or the whole head larger than the limits, or too many fields (431).
    HeaderTooLarge,
    /// Body larger than the limit (413).
    PayloadTooLarge,
    /// A transfer coding we do not implement (501).
    NotImplemented,
    /// An HTTP major version other than 1 (505).
    VersionNotSupported,
    /// An `Expect` other than `100-continue` (417).
    ExpectationFailed,
    /// The head did not arrive within the header timeout (408).
    HeaderTimeout,
    /// The body did not arrive within the body timeout (408).
    BodyTimeout,
}

impl ErrorClass {
    /// Every class, in counter order.
    pub const ALL: [ErrorClass; 9] = [
        ErrorClass::BadRequest,
        ErrorClass::UriTooLong,
        ErrorClass::HeaderTooLarge,
        ErrorClass::PayloadTooLarge,
        ErrorClass::NotImplemented,
        ErrorClass::VersionNotSupported,
        ErrorClass::ExpectationFailed,
        ErrorClass::HeaderTimeout,
        ErrorClass::BodyTimeout,
    ];

    /// The status code answered for this class.
    pub fn status(self) -> u16 {
        match self {
            ErrorClass::BadRequest => 400,
            ErrorClass::UriTooLong => 414,
            ErrorClass::HeaderTooLarge => 431,
            ErrorClass::PayloadTooLarge => 413,
            ErrorClass::NotImplemented => 501,
            ErrorClass::VersionNotSupported => 505,
            ErrorClass::ExpectationFailed => 417,
            ErrorClass::HeaderTimeout | ErrorClass::BodyTimeout => 408,
        }
    }

    /// A short name for logs and counters.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::BadRequest => "bad_request",
            ErrorClass::UriTooLong => "uri_too_long",
            ErrorClass::HeaderTooLarge => "header_too_large",
            ErrorClass::PayloadTooLarge => "payload_too_large",
            ErrorClass::NotImplemented => "not_implemented",
            ErrorClass::VersionNotSupported => "version_not_supported",
            ErrorClass::ExpectationFailed => "expectation_failed",
            ErrorClass::HeaderTimeout => "header_timeout",
            ErrorClass::BodyTimeout => "body_timeout",
        }
    }

    pub(crate) fn index(self) -> usize {
        ErrorClass::ALL
            .iter()
            .position(|c| *c == self)
            .expect("every class is listed")
    }
}

/// A refused request: its class and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The class (which decides the status).
    pub class: ErrorClass,
    /// What was wrong, for logs.
    pub reason: &'static str,
}

impl HttpError {
    pub(crate) fn new(class: ErrorClass, reason: &'static str) -> Self {
        HttpError { class, reason }
    }

    pub(crate) fn bad(reason: &'static str) -> Self {
        HttpError::new(ErrorClass::BadRequest, reason)
    }

    /// The status code to answer with.
    pub fn status(&self) -> u16 {
        self.class.status()
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.status(),
            self.class.name(),
            self.reason
        )
    }
}

impl std::error::Error for HttpError {}
