//! The C conversions flashbench prints with, as glibc's printf prints them: `%g` with a
//! precision (`%.3g`, `%.4g`, plain `%g` = 6), `%f`, and `snprintf(buf, 8, ...)`'s cut to
//! 7 bytes. flashbench formats into 8-byte buffers, so a value's text is cut at 7 *bytes*
//! ("µ" is 2 of them in UTF-8): the text is bytes here, not `str`.
//!
//! Rounding: Rust's exact float formatting rounds the binary value's exact decimal
//! expansion to nearest, ties to even, as glibc does in the default rounding mode (checked
//! against glibc in the tests of `flashbench/oracle.rs`). NaN prints as glibc prints it:
//! `nan` or `-nan` by its sign bit.

/// `%.{prec}g` (C: a precision of 0 is taken as 1).
pub fn g(x: f64, prec: usize) -> String {
    if let Some(s) = special(x) {
        return s;
    }
    let p = prec.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // The exponent after rounding to p significant digits decides the style (C11
    // 7.21.6.1: style e if X < -4 or X >= P).
    let e_form = format!("{:.*e}", p - 1, x);
    let (mant, exp) = e_form.split_once('e').expect("Rust's {:e} has an exponent");
    let exp: i64 = exp.parse().expect("Rust's exponent is a number");
    if exp < -4 || exp >= p as i64 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mant), exp.unsigned_abs())
    } else {
        let decimals = (p as i64 - 1 - exp) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

/// `%f`: six decimals.
pub fn f(x: f64) -> String {
    if let Some(s) = special(x) {
        return s;
    }
    format!("{x:.6}")
}

/// NaN and the infinities, as glibc spells them.
fn special(x: f64) -> Option<String> {
    let neg = x.is_sign_negative();
    if x.is_nan() {
        Some(if neg { "-nan" } else { "nan" }.to_string())
    } else if x.is_infinite() {
        Some(if neg { "-inf" } else { "inf" }.to_string())
    } else {
        None
    }
}

/// `%g` without `#`: trailing zeros of the fraction go, and the point if nothing is left.
fn strip_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

/// What `snprintf(buf, 8, ...)` leaves in `buf`: the first 7 bytes.
pub fn cut7(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    b[..b.len().min(7)].to_vec()
}

/// C's `(long long)f` on x86-64 (cvttss2si/cvttsd2si): truncation toward zero, and the
/// "integer indefinite" value `LLONG_MIN` for NaN and anything out of range (Rust's `as`
/// saturates instead).
pub fn f64_to_ll(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// x86-64's invalid-operation result is the "default NaN", which has its sign bit set;
/// NaNs then travel through + - * / unchanged. Rust leaves a NaN's sign unspecified, so the
/// float arithmetic that can make NaNs (flashbench's regression) passes each result
/// through here, which gives every NaN the sign the C program's NaNs have.
pub fn x86_nan32(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(0xffc0_0000)
    } else {
        x
    }
}

/// [`x86_nan32`] for doubles.
pub fn x86_nan64(x: f64) -> f64 {
    if x.is_nan() {
        f64::from_bits(0xfff8_0000_0000_0000)
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values worked by hand from C11's definition of %g and glibc's round-half-even.
    #[test]
    fn g_follows_c() {
        assert_eq!(g(741.0, 3), "741");
        assert_eq!(g(1.08, 3), "1.08");
        assert_eq!(g(53.3, 3), "53.3");
        assert_eq!(g(5.85, 3), "5.85");
        assert_eq!(g(999.9995, 3), "1e+03");
        assert_eq!(g(1000.0, 6), "1000");
        assert_eq!(g(0.0001, 6), "0.0001");
        assert_eq!(g(0.00001, 6), "1e-05");
        assert_eq!(g(123456789.0, 6), "1.23457e+08");
        assert_eq!(g(29.727_738_3, 6), "29.7277");
        assert_eq!(g(9.223372036854776e18, 4), "9.223e+18");
        assert_eq!(g(5.551115123125783e-14, 6), "5.55112e-14");
        // 0.125 is exact in binary: a true tie at two digits, to even.
        assert_eq!(g(0.125, 2), "0.12");
        assert_eq!(g(0.375, 2), "0.38");
        assert_eq!(g(100.5, 3), "100");
        assert_eq!(g(101.5, 3), "102");
        assert_eq!(g(0.0, 3), "0");
        assert_eq!(g(-0.0, 3), "-0");
        assert_eq!(g(-1.5, 6), "-1.5");
        assert_eq!(g(1e100, 4), "1e+100");
        assert_eq!(g(f64::from_bits(0xfff8_0000_0000_0000), 6), "-nan");
        assert_eq!(g(f64::INFINITY, 6), "inf");
    }

    #[test]
    fn f_has_six_decimals() {
        assert_eq!(f(0.0), "0.000000");
        assert_eq!(f(4.0), "4.000000");
        assert_eq!(f(0.015625), "0.015625");
        assert_eq!(f(0.0000005), "0.000000"); // 5e-7 is just below the tie in binary
        assert_eq!(f(-2048.0), "-2048.000000");
    }

    #[test]
    fn cut7_counts_bytes() {
        assert_eq!(cut7("-12345ns"), b"-12345n".to_vec());
        assert_eq!(cut7("1e+03µs"), "1e+03µ".as_bytes().to_vec());
        assert_eq!(cut7("741µs"), "741µs".as_bytes().to_vec());
    }

    #[test]
    fn float_to_ll_is_x86s() {
        assert_eq!(f64_to_ll(f64::NAN), i64::MIN);
        assert_eq!(f64_to_ll(1e19), i64::MIN);
        assert_eq!(f64_to_ll(-1e19), i64::MIN);
        assert_eq!(f64_to_ll(-2.9), -2);
        assert_eq!(f64_to_ll(2.9), 2);
    }
}
