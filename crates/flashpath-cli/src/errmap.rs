//! fio's error options, from a parsed job to the simulator's `ErrorPolicy` (core's
//! sim/jobs/errors.rs): `continue_on_error` and `ignore_error` (options.c
//! `str_ignore_error_cb`, `ignore_error_type`, `str2error`, fio 3.33).
//!
//! The options are applied in the order the job sets them (global section first), as
//! fio parses them: `continue_on_error` sets the type bits; `ignore_error` sets, per
//! type (read, write, verify, comma-separated), a `:`-separated list of errno names or
//! numbers and adds that type's bit; a later `continue_on_error` replaces the bits.

use anyhow::{bail, Result};
use flashpath_core::sim::errors::ErrorPolicy;
use flashpath_fio::parse::Job;

/// fio's str2error table: the names ignore_error takes (errno = position + 1).
const ERRNO_NAMES: &[&str] = &[
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// continue_on_error's values (options.c posval) as type bits.
fn continue_bits(v: &str) -> Option<u8> {
    Some(match v {
        "none" | "0" => 0,
        "read" => 1,
        "write" => 2,
        "io" => 3,
        "verify" => 4,
        // ERROR_TYPE_ANY (0xffff): every type.
        "all" | "1" => 7,
        _ => return None,
    })
}

/// One errno of an ignore_error list (`EIO` or `5`; fio takes `-5` as 5).
fn errno(s: &str) -> Option<i32> {
    if s.starts_with('E') {
        return ERRNO_NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| i as i32 + 1);
    }
    // atoi: leading digits, 0 when none (fio's "Unknown error").
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n: i32 = digits[..end].parse().unwrap_or(0);
    let n = if neg { -n } else { n };
    (n != 0).then_some(n.abs())
}

/// The job's error policy.
pub fn policy(job: &Job) -> Result<ErrorPolicy> {
    let mut p = ErrorPolicy::default();
    for s in &job.set_options {
        let v = s.value.as_deref().unwrap_or("").trim();
        match s.name.as_str() {
            "continue_on_error" => match continue_bits(v) {
                Some(b) => p.continue_on = b,
                None => bail!(
                    "continue_on_error={v} ({}) is not one of fio's values (none, read, write, io, verify, all, 0, 1)",
                    s.origin
                ),
            },
            "ignore_error" => {
                for (t, list) in v.split(',').enumerate() {
                    if t >= 3 {
                        bail!(
                            "ignore_error={v} ({}): more than the three error types (read, write, verify)",
                            s.origin
                        );
                    }
                    let mut errs = Vec::new();
                    // strsep on ':' stops at the first empty name.
                    for name in list.split(':') {
                        if name.is_empty() {
                            break;
                        }
                        match errno(name) {
                            Some(e) => errs.push(e),
                            None => bail!(
                                "ignore_error={v} ({}): unknown error {name} (fio's names are {}..{}; use its number)",
                                s.origin,
                                ERRNO_NAMES[0],
                                ERRNO_NAMES[ERRNO_NAMES.len() - 1]
                            ),
                        }
                    }
                    if !errs.is_empty() {
                        p.continue_on |= 1 << t;
                        p.ignore[t] = Some(errs);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_errno_names_and_numbers() {
        assert_eq!(errno("EIO"), Some(5));
        assert_eq!(errno("ENOTTY"), Some(25));
        assert_eq!(errno("ENOSPC"), Some(28));
        assert_eq!(errno("ERANGE"), Some(34));
        assert_eq!(errno("EILSEQ"), None);
        assert_eq!(errno("84"), Some(84));
        assert_eq!(errno("-28"), Some(28));
        assert_eq!(errno("x"), None);
        assert_eq!(continue_bits("io"), Some(3));
        assert_eq!(continue_bits("all"), Some(7));
        assert_eq!(continue_bits("some"), None);
    }

    fn policy_of(args: &[&str]) -> ErrorPolicy {
        use flashpath_fio::parse::{parse_command_line, Env};
        let mut a: Vec<String> = vec!["--name=t".into()];
        a.extend(args.iter().map(|s| s.to_string()));
        let inv = parse_command_line(&a, &Env::from_process()).unwrap();
        policy(&inv.jobs[0]).unwrap()
    }

    #[test]
    fn options_apply_in_the_order_set_as_fio_parses_them() {
        // ignore_error adds its types' bits; a later continue_on_error replaces them.
        let p = policy_of(&["--continue_on_error=read", "--ignore_error=,ENOSPC:ENOTTY"]);
        assert_eq!(p.continue_on, 0b011);
        assert_eq!(p.ignore, [None, Some(vec![28, 25]), None]);
        let p = policy_of(&["--ignore_error=,ENOSPC", "--continue_on_error=none"]);
        assert_eq!(p.continue_on, 0);
        assert_eq!(p.ignore[1], Some(vec![28]));
        // An empty list leaves the type's default (EIO, EILSEQ) and its bit alone.
        let p = policy_of(&["--ignore_error=EIO:,,84"]);
        assert_eq!(p.continue_on, 0b101);
        assert_eq!(p.ignore, [Some(vec![5]), None, Some(vec![84])]);
    }
}
