//! The small pieces of a response head that both ways of writing one share (the
//! [`Responder`](crate::response::Responder), which writes a head per response, and
//! [`PreparedResponse`](crate::prepared::PreparedResponse), which renders one ahead of
//! time): numbers in decimal, which statuses carry no body, which fields the server
//! writes itself.

/// 1xx, 204 and 304 carry no body and no framing fields.
pub(crate) fn has_no_body(status: u16) -> bool {
    status == 204 || status == 304 || (100..200).contains(&status)
}

/// Whether `name` (lower case, as `HeaderName`s are) is a field the server writes
/// itself: the framing fields, `Date`, and `Server` when the server names itself
/// (`prefix` is the [`ResponseContext::prefix`](crate::response::ResponseContext::prefix)).
#[inline]
pub(crate) fn is_servers_field(name: &[u8], prefix: &[u8]) -> bool {
    match name.len() {
        4 => name == b"date",
        6 => name == b"server" && prefix.starts_with(b"server"),
        10 => name == b"connection",
        14 => name == b"content-length",
        17 => name == b"transfer-encoding",
        _ => false,
    }
}

/// Appends `n` in decimal.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    // The common case, a small body: without the general loop.
    if n < 100 {
        if n < 10 {
            out.push(b'0' + n as u8);
        } else {
            out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
        }
        return;
    }
    let mut buf = [0u8; 20];
    let len = put_dec(&mut buf, n);
    out.extend_from_slice(&buf[..len]);
}

/// Writes `n` in decimal at the start of `buf` (20 bytes hold any u64), two digits per
/// step; returns how many bytes it took.
pub(crate) fn put_dec(buf: &mut [u8], mut n: u64) -> usize {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839404142434445464748495051525354555657585960\
        6162636465666768697071727374757677787980818283848586878889909192939495969798\
        99";
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while n >= 100 {
        let p = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    if n >= 10 {
        let p = n as usize * 2;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    } else {
        i -= 1;
        tmp[i] = b'0' + n as u8;
    }
    let len = tmp.len() - i;
    buf[..len].copy_from_slice(&tmp[i..]);
    len
}
