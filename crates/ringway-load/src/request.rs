//! The request bytes: method, headers and body, built once per URL before the run so
//! that sending a request costs no formatting.

use crate::target::Target;

/// What to send, the same for every URL.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    /// Method; default `GET`.
    pub method: String,
    /// Extra headers, in order. A `Host` here replaces the automatic one.
    pub headers: Vec<(String, String)>,
    /// Body, sent with a `Content-Length`.
    pub body: Option<Vec<u8>>,
}

impl RequestSpec {
    /// Whether the responses carry no body whatever their headers say.
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// The complete request for `target`.
    pub fn build(&self, target: &Target) -> Vec<u8> {
        let method = if self.method.is_empty() {
            "GET"
        } else {
            &self.method
        };
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(format!("{method} {} HTTP/1.1\r\n", target.path).as_bytes());
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !has("host") {
            out.extend_from_slice(format!("Host: {}\r\n", target.authority).as_bytes());
        }
        for (n, v) in &self.headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        let body = self.body.as_deref();
        let wants_length = body.is_some()
            || ["POST", "PUT", "PATCH"]
                .iter()
                .any(|m| method.eq_ignore_ascii_case(m));
        if wants_length && !has("content-length") && !has("transfer-encoding") {
            let len = body.map_or(0, <[u8]>::len);
            out.extend_from_slice(format!("Content-Length: {len}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        if let Some(b) = body {
            out.extend_from_slice(b);
        }
        out
    }
}

/// Checks a header given as `Name: value` on the command line.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (n, v) = s
        .split_once(':')
        .ok_or_else(|| format!("header {s:?} must look like 'Name: value'"))?;
    let n = n.trim();
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(format!("header name {n:?} is not a token"));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!("header value of {n} has a line break"));
    }
    Ok((n.to_string(), v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_get_and_post() {
        let t = Target::parse("http://127.0.0.1:8080/x").unwrap();
        let get = RequestSpec::default().build(&t);
        assert_eq!(get, b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
        let post = RequestSpec {
            method: "POST".into(),
            headers: vec![("X-A".into(), "1".into())],
            body: Some(b"hello".to_vec()),
        }
        .build(&t);
        assert_eq!(
            post,
            b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello"
        );
        assert!(parse_header("X-B: two words").is_ok());
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: v").is_err());
    }
}
