//! flashbench's command line, parsed as flashbench 62 (Debian's package; upstream
//! bradfa/flashbench 2e30b19) parses it: `parse_arguments()` with glibc's `getopt_long`,
//! reproduced here step by step (argument permutation, `--name=value` or `--name value`,
//! unique abbreviations of long names, clustered short options, the error messages glibc
//! prints). Numbers are read as flashbench reads them: `atoi` (so `-e 4M` is 4), and
//! `strtoull(..., 0)` for `--offset` (so hex works).
//!
//! What differs from flashbench 62, on purpose:
//! - `-A` (the write variant of `-a`, a flashpath extension: no flashbench release had it);
//! - `--find-fat` is accepted beside 62's `--findfat` (62's own `--help` says `--find-fat`;
//!   upstream renamed the option in 3b41063, Nov 2012);
//! - the environment's POSIXLY_CORRECT is ignored (getopt then stops at the first
//!   non-option); flashpath parses as without it.
//!
//! A bad command line is flashbench's answer: glibc's line on standard error, the help
//! text on standard output after an option error, exit status 234 (`-EINVAL`).

/// flashbench 62's short options, plus flashpath's `A`.
const OPTSTRING: &[u8] = b"o:siafF:Ovrc:b:e:pA";

struct LongOpt {
    name: &'static str,
    has_arg: bool,
    val: u8,
}

/// parse_arguments()'s `long_options`, in its order (the order glibc lists ambiguous
/// possibilities in), with `find-fat` after 62's `findfat`.
const LONG_OPTIONS: &[LongOpt] = &[
    LongOpt {
        name: "out",
        has_arg: true,
        val: b'o',
    },
    LongOpt {
        name: "scatter",
        has_arg: false,
        val: b's',
    },
    LongOpt {
        name: "scatter-order",
        has_arg: true,
        val: b'S',
    },
    LongOpt {
        name: "scatter-span",
        has_arg: true,
        val: b'$',
    },
    LongOpt {
        name: "align",
        has_arg: false,
        val: b'a',
    },
    LongOpt {
        name: "interval",
        has_arg: false,
        val: b'i',
    },
    LongOpt {
        name: "interval-order",
        has_arg: true,
        val: b'I',
    },
    LongOpt {
        name: "findfat",
        has_arg: false,
        val: b'f',
    },
    LongOpt {
        name: "find-fat",
        has_arg: false,
        val: b'f',
    },
    LongOpt {
        name: "fat-nr",
        has_arg: true,
        val: b'F',
    },
    LongOpt {
        name: "open-au",
        has_arg: false,
        val: b'O',
    },
    LongOpt {
        name: "open-au-nr",
        has_arg: true,
        val: b'0',
    },
    LongOpt {
        name: "offset",
        has_arg: true,
        val: b't',
    },
    LongOpt {
        name: "random",
        has_arg: false,
        val: b'r',
    },
    LongOpt {
        name: "verbose",
        has_arg: false,
        val: b'v',
    },
    LongOpt {
        name: "count",
        has_arg: true,
        val: b'c',
    },
    LongOpt {
        name: "blocksize",
        has_arg: true,
        val: b'b',
    },
    LongOpt {
        name: "erasesize",
        has_arg: true,
        val: b'e',
    },
];

/// The name flashbench's messages carry (its `argv[0]`).
pub const PROG: &str = "flashbench";

/// flashbench 62's `print_help()`, byte for byte (its unclosed "(default: 8" included).
pub fn help_text() -> String {
    format!(
        "{PROG} [OPTION]... [DEVICE]\n\
         run tests on DEVICE, pointing to a flash storage medium.\n\n\
         -o, --out=FILE\twrite output to FILE instead of stdout\n\
         -s, --scatter\trun scatter read test\n\
         \x20   --scatter-order=N scatter across 2^N blocks\n\
         \x20   --scatter-span=N span each write across N blocks\n\
         -f, --find-fat\tanalyse first few erase blocks\n\
         \x20   --fat-nr=N\tlook through first N erase blocks (default: 6)\n\
         -O, --open-au\tfind number of open erase blocks\n\
         \x20   --open-au-nr=N try N open erase blocks\n\
         \x20   --offset=N  start at position N\n\
         -r, --random\tuse pseudorandom access with erase block\n\
         -v, --verbose\tincrease verbosity of output\n\
         -c, --count=N\trun each test N times (default: 8\n\
         -b, --blocksize=N use a blocksize of N (default:16K)\n\
         -e, --erasesize=N use a eraseblock size of N (default:4M)\n"
    )
}

/// flashbench's `struct arguments` (and its global `verbose`), with flashpath's `-A`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub dev: String,
    pub out: Option<String>,
    pub scatter: bool,
    pub interval: bool,
    pub program: bool,
    pub fat: bool,
    pub open_au: bool,
    pub align: bool,
    /// `-A`: the alignment test with writes (flashpath's extension).
    pub write_align: bool,
    pub random: bool,
    pub count: i32,
    pub blocksize: i32,
    pub erasesize: i32,
    /// `u64::MAX` (C's `-1ull`): not given, -O starts 16 MiB in, rounded up to an AU.
    pub offset: u64,
    pub scatter_order: i32,
    pub scatter_span: i32,
    pub interval_order: i32,
    pub fat_nr: i32,
    pub open_au_nr: i32,
    pub verbose: i32,
    /// `argv[1]` after getopt's permutation, which `-v -v` prints as the "filename".
    pub argv1: String,
    /// Numbers flashbench reads differently from how they look (`-e 4M` is 4): one line
    /// each, for standard error.
    pub warnings: Vec<String>,
}

impl Args {
    fn defaults() -> Args {
        Args {
            dev: String::new(),
            out: None,
            scatter: false,
            interval: false,
            program: false,
            fat: false,
            open_au: false,
            align: false,
            write_align: false,
            random: false,
            count: 8,
            blocksize: 16384,
            erasesize: 4 * 1024 * 1024,
            offset: u64::MAX,
            scatter_order: 9,
            scatter_span: 1,
            interval_order: 0,
            fat_nr: 6,
            open_au_nr: 2,
            verbose: 0,
            argv1: String::new(),
            warnings: Vec::new(),
        }
    }
}

/// A command line flashbench refuses: what it prints, and its exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub stdout: String,
    pub stderr: Vec<u8>,
    pub status: u8,
}

/// `-EINVAL` as an exit status.
pub const EXIT_EINVAL: u8 = 234;

/// glibc's getopt state (`struct _getopt_data`), for the permuting, long-option case.
struct Getopt {
    argv: Vec<Vec<u8>>,
    optind: usize,
    /// Index into `argv[optind_of_nextchar]` of the next short option character.
    nextchar: Option<(usize, usize)>,
    first_nonopt: usize,
    last_nonopt: usize,
    optarg: Option<Vec<u8>>,
    stderr: Vec<u8>,
}

/// What one `getopt_long` call returns.
enum Got {
    Opt(u8),
    Error,
    End,
}

impl Getopt {
    fn new(argv: Vec<Vec<u8>>) -> Self {
        Getopt {
            argv,
            optind: 1,
            nextchar: None,
            first_nonopt: 1,
            last_nonopt: 1,
            optarg: None,
            stderr: Vec::new(),
        }
    }

    fn err(&mut self, parts: &[&[u8]]) {
        self.stderr.extend_from_slice(PROG.as_bytes());
        self.stderr.extend_from_slice(b": ");
        for p in parts {
            self.stderr.extend_from_slice(p);
        }
        self.stderr.push(b'\n');
    }

    fn nonoption(&self, i: usize) -> bool {
        let a = &self.argv[i];
        a.first() != Some(&b'-') || a.len() == 1
    }

    /// glibc's `exchange()`: moves the skipped non-options `[first_nonopt, last_nonopt)`
    /// after the options `[last_nonopt, optind)`, each keeping its order.
    fn exchange(&mut self) {
        let (bottom, middle, top) = (self.first_nonopt, self.last_nonopt, self.optind);
        if top > middle && middle > bottom {
            self.argv[bottom..top].rotate_left(middle - bottom);
        }
        self.first_nonopt += self.optind - self.last_nonopt;
        self.last_nonopt = self.optind;
    }

    /// One `getopt_long(argc, argv, OPTSTRING, LONG_OPTIONS, ...)` call.
    fn next(&mut self) -> Got {
        let argc = self.argv.len();
        self.optarg = None;
        let pending = matches!(self.nextchar, Some((i, k)) if k < self.argv[i].len());
        if !pending {
            self.last_nonopt = self.last_nonopt.min(self.optind);
            self.first_nonopt = self.first_nonopt.min(self.optind);
            if self.first_nonopt != self.last_nonopt && self.last_nonopt != self.optind {
                self.exchange();
            } else if self.last_nonopt != self.optind {
                self.first_nonopt = self.optind;
            }
            while self.optind < argc && self.nonoption(self.optind) {
                self.optind += 1;
            }
            self.last_nonopt = self.optind;
            if self.optind != argc && self.argv[self.optind] == b"--" {
                self.optind += 1;
                if self.first_nonopt != self.last_nonopt && self.last_nonopt != self.optind {
                    self.exchange();
                } else if self.first_nonopt == self.last_nonopt {
                    self.first_nonopt = self.optind;
                }
                self.last_nonopt = argc;
                self.optind = argc;
            }
            if self.optind == argc {
                if self.first_nonopt != self.last_nonopt {
                    self.optind = self.first_nonopt;
                }
                return Got::End;
            }
            // PERMUTE ordering has skipped every non-option above.
            if self.argv[self.optind][1] == b'-' {
                return self.long_option();
            }
            self.nextchar = Some((self.optind, 1));
        }
        self.short_option()
    }

    fn long_option(&mut self) -> Got {
        let argc = self.argv.len();
        let arg = self.argv[self.optind].clone();
        let body = &arg[2..];
        let name_len = body.iter().position(|&c| c == b'=').unwrap_or(body.len());
        let name = &body[..name_len];
        let mut found = LONG_OPTIONS.iter().position(|o| o.name.as_bytes() == name);
        if found.is_none() {
            let mut ambiguous: Vec<usize> = Vec::new();
            for (i, o) in LONG_OPTIONS.iter().enumerate() {
                if !o.name.as_bytes().starts_with(name) {
                    continue;
                }
                match found {
                    None => found = Some(i),
                    Some(f) => {
                        let p = &LONG_OPTIONS[f];
                        if p.has_arg != o.has_arg || p.val != o.val {
                            if ambiguous.is_empty() {
                                ambiguous.push(f);
                            }
                            ambiguous.push(i);
                        }
                    }
                }
            }
            if !ambiguous.is_empty() {
                let mut msg = b"option '--".to_vec();
                msg.extend_from_slice(body);
                msg.extend_from_slice(b"' is ambiguous; possibilities:");
                for i in ambiguous {
                    msg.extend_from_slice(format!(" '--{}'", LONG_OPTIONS[i].name).as_bytes());
                }
                self.err(&[&msg]);
                self.nextchar = None;
                self.optind += 1;
                return Got::Error;
            }
        }
        let Some(f) = found else {
            self.err(&[b"unrecognized option '--", body, b"'"]);
            self.nextchar = None;
            self.optind += 1;
            return Got::Error;
        };
        let o = &LONG_OPTIONS[f];
        self.optind += 1;
        self.nextchar = None;
        if name_len < body.len() {
            if o.has_arg {
                self.optarg = Some(body[name_len + 1..].to_vec());
            } else {
                let m = format!("option '--{}' doesn't allow an argument", o.name);
                self.err(&[m.as_bytes()]);
                return Got::Error;
            }
        } else if o.has_arg {
            if self.optind < argc {
                self.optarg = Some(self.argv[self.optind].clone());
                self.optind += 1;
            } else {
                let m = format!("option '--{}' requires an argument", o.name);
                self.err(&[m.as_bytes()]);
                return Got::Error;
            }
        }
        Got::Opt(o.val)
    }

    fn short_option(&mut self) -> Got {
        let argc = self.argv.len();
        let (i, k) = self.nextchar.expect("a short option is pending");
        let c = self.argv[i][k];
        let rest = k + 1;
        self.nextchar = Some((i, rest));
        let last = rest >= self.argv[i].len();
        if last {
            self.optind += 1;
        }
        let spec = OPTSTRING.iter().position(|&x| x == c);
        let Some(spec) = spec.filter(|_| c != b':' && c != b';') else {
            self.err(&[b"invalid option -- '", &[c], b"'"]);
            return Got::Error;
        };
        if OPTSTRING.get(spec + 1) == Some(&b':') {
            if !last {
                self.optarg = Some(self.argv[i][rest..].to_vec());
                self.optind += 1;
            } else if self.optind == argc {
                self.err(&[b"option requires an argument -- '", &[c], b"'"]);
                self.nextchar = None;
                return Got::Error;
            } else {
                self.optarg = Some(self.argv[self.optind].clone());
                self.optind += 1;
            }
            self.nextchar = None;
        }
        Got::Opt(c)
    }
}

/// glibc's strto* prefix: leading white space (isspace), then an optional sign. Returns
/// the index after them and whether the sign was `-`.
fn space_and_sign(s: &[u8]) -> (usize, bool) {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    match s.get(i) {
        Some(b'-') => (i + 1, true),
        Some(b'+') => (i + 1, false),
        _ => (i, false),
    }
}

/// glibc's `strtol(s, NULL, 10)`: leading white space, a sign, decimal digits; out of
/// range clamps to the `long` limits. Returns the value and whether the whole text was a
/// number.
fn strtol10(s: &[u8]) -> (i64, bool) {
    let (mut i, neg) = space_and_sign(s);
    let start = i;
    let mut mag: u64 = 0;
    let mut over = false;
    while i < s.len() && s[i].is_ascii_digit() {
        mag = match mag
            .checked_mul(10)
            .and_then(|m| m.checked_add((s[i] - b'0') as u64))
        {
            Some(m) => m,
            None => {
                over = true;
                u64::MAX
            }
        };
        i += 1;
    }
    let whole = i > start && i == s.len();
    let v = if neg {
        if over || mag > 1u64 << 63 {
            i64::MIN
        } else {
            (mag as i64).wrapping_neg()
        }
    } else if over || mag > i64::MAX as u64 {
        i64::MAX
    } else {
        mag as i64
    };
    (v, whole)
}

/// glibc's `atoi`: `(int) strtol(s, NULL, 10)` (the low 32 bits of the clamped `long`).
pub fn atoi(s: &[u8]) -> (i32, bool) {
    let (v, whole) = strtol10(s);
    (v as i32, whole)
}

/// glibc's `strtoull(s, NULL, 0)`: base 16 after `0x`, 8 after a leading `0`, else 10; a
/// `-` negates modulo 2^64; out of range gives `ULLONG_MAX`.
pub fn strtoull0(s: &[u8]) -> (u64, bool) {
    let (mut i, neg) = space_and_sign(s);
    let mut base = 10u64;
    if s.get(i) == Some(&b'0') {
        if matches!(s.get(i + 1), Some(b'x' | b'X'))
            && s.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
        {
            base = 16;
            i += 2;
        } else {
            base = 8;
        }
    }
    let start = i;
    let mut v: u64 = 0;
    let mut over = false;
    while let Some(d) = s.get(i).and_then(|&c| (c as char).to_digit(base as u32)) {
        match v.checked_mul(base).and_then(|m| m.checked_add(d as u64)) {
            Some(m) => v = m,
            None => over = true,
        }
        i += 1;
    }
    let whole = i > start && i == s.len();
    if over {
        return (u64::MAX, whole);
    }
    (if neg { v.wrapping_neg() } else { v }, whole)
}

/// Parses flashbench's arguments (`argv[1..]`, without flashpath's own options).
pub fn parse(argv: &[String]) -> Result<Args, Refusal> {
    let mut full: Vec<Vec<u8>> = vec![PROG.as_bytes().to_vec()];
    full.extend(argv.iter().map(|a| a.as_bytes().to_vec()));
    let mut g = Getopt::new(full);
    let mut a = Args::defaults();
    let refuse = |g: &Getopt, help: bool| Refusal {
        stdout: if help { help_text() } else { String::new() },
        stderr: g.stderr.clone(),
        status: EXIT_EINVAL,
    };
    loop {
        let c = match g.next() {
            Got::End => break,
            Got::Error => return Err(refuse(&g, true)),
            Got::Opt(c) => c,
        };
        let optarg = g.optarg.clone().unwrap_or_default();
        let int = |what: &str, a: &mut Args| -> i32 {
            let (v, whole) = atoi(&optarg);
            if !whole {
                a.warnings.push(format!(
                    "warning: {what} '{}' is {v} to flashbench, which reads numbers with atoi (plain bytes, no suffixes)",
                    String::from_utf8_lossy(&optarg)
                ));
            }
            v
        };
        match c {
            b'o' => a.out = Some(String::from_utf8_lossy(&optarg).into_owned()),
            b's' => a.scatter = true,
            b'S' => a.scatter_order = int("--scatter-order", &mut a),
            b'$' => a.scatter_span = int("--scatter-span", &mut a),
            b'a' => a.align = true,
            b'A' => a.write_align = true,
            b'i' => a.interval = true,
            b'I' => a.interval_order = int("--interval-order", &mut a),
            b'f' => a.fat = true,
            b'F' => a.fat_nr = int("--fat-nr", &mut a),
            b'O' => a.open_au = true,
            b'0' => a.open_au_nr = int("--open-au-nr", &mut a),
            b'r' => a.random = true,
            b'p' => a.program = true,
            b'v' => a.verbose += 1,
            b'c' => a.count = int("--count", &mut a),
            b'b' => a.blocksize = int("--blocksize", &mut a),
            b'e' => a.erasesize = int("--erasesize", &mut a),
            b't' => {
                let (v, whole) = strtoull0(&optarg);
                if !whole {
                    a.warnings.push(format!(
                        "warning: --offset '{}' is {v} to flashbench, which reads it with strtoull (bytes; 0x for hex)",
                        String::from_utf8_lossy(&optarg)
                    ));
                }
                a.offset = v;
            }
            other => unreachable!(
                "getopt returned '{}', which is not in the tables",
                other as char
            ),
        }
    }
    let argc = g.argv.len();
    let prog_err = |msg: &str| Refusal {
        stdout: String::new(),
        stderr: format!("{PROG}: {msg}\n").into_bytes(),
        status: EXIT_EINVAL,
    };
    if g.optind + 1 != argc {
        return Err(prog_err("invalid arguments"));
    }
    a.dev = String::from_utf8_lossy(&g.argv[g.optind]).into_owned();
    a.argv1 = String::from_utf8_lossy(&g.argv[1]).into_owned();
    if !(a.scatter || a.interval || a.program || a.fat || a.open_au || a.align || a.write_align) {
        return Err(prog_err("need at least one action"));
    }
    if a.scatter && a.scatter_order > 16 {
        return Err(prog_err("scatter_order must be at most 16"));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Args, Refusal> {
        let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        parse(&v)
    }

    fn stderr(s: &str) -> String {
        String::from_utf8(p(s).unwrap_err().stderr).unwrap()
    }

    #[test]
    fn defaults_are_flashbench_62s() {
        let a = p("-a /dev/mmcblk0").unwrap();
        assert_eq!(a.dev, "/dev/mmcblk0");
        assert!(a.align && !a.scatter && !a.open_au);
        assert_eq!(
            (a.count, a.blocksize, a.erasesize, a.offset),
            (8, 16384, 4194304, u64::MAX)
        );
        assert_eq!(
            (a.scatter_order, a.scatter_span, a.interval_order),
            (9, 1, 0)
        );
        assert_eq!((a.fat_nr, a.open_au_nr, a.verbose), (6, 2, 0));
    }

    #[test]
    fn values_attached_or_following_and_abbreviated() {
        let a = p("-c3 -b 1024 --erasesize=8388608 --open-au-nr 3 --off=0x1000000 -O dev").unwrap();
        assert_eq!((a.count, a.blocksize, a.erasesize), (3, 1024, 8388608));
        assert_eq!((a.open_au_nr, a.offset), (3, 0x1000000));
        // Clustered flags, and the device before the options (permutation).
        let a = p("dev -avv").unwrap();
        assert!(a.align);
        assert_eq!(a.verbose, 2);
        assert_eq!(a.dev, "dev");
        // argv[1] after permutation is the first option.
        assert_eq!(a.argv1, "-avv");
        // An exact name wins over being a prefix of others.
        assert!(p("--scatter dev").unwrap().scatter);
        assert!(p("--open-au dev").unwrap().open_au);
        // 62's spelling and the later one.
        assert!(p("--findfat dev").unwrap().fat);
        assert!(p("--find-fat dev").unwrap().fat);
        assert!(p("--fi dev").unwrap().fat);
    }

    #[test]
    fn atoi_and_strtoull_as_glibc() {
        assert_eq!(atoi(b"4M"), (4, false));
        assert_eq!(atoi(b"  -12"), (-12, true));
        assert_eq!(atoi(b"4294967296"), (0, true));
        assert_eq!(atoi(b"99999999999999999999"), (-1, true));
        assert_eq!(atoi(b"x"), (0, false));
        assert_eq!(atoi(b""), (0, false));
        assert_eq!(strtoull0(b"0x10"), (16, true));
        assert_eq!(strtoull0(b"010"), (8, true));
        assert_eq!(strtoull0(b"-1"), (u64::MAX, true));
        assert_eq!(strtoull0(b"0x"), (0, false));
        assert_eq!(strtoull0(b"99999999999999999999"), (u64::MAX, true));
        let a = p("-e 4M -O dev").unwrap();
        assert_eq!(a.erasesize, 4);
        assert_eq!(a.warnings.len(), 1);
    }

    /// The messages glibc 2.36's getopt_long printed for flashbench 62 (checked with the
    /// Debian binary).
    #[test]
    fn errors_are_flashbench_62s() {
        assert_eq!(stderr("-a -x dev"), "flashbench: invalid option -- 'x'\n");
        assert_eq!(
            stderr("--foo dev"),
            "flashbench: unrecognized option '--foo'\n"
        );
        assert_eq!(
            stderr("--open dev"),
            "flashbench: option '--open' is ambiguous; possibilities: '--open-au' '--open-au-nr'\n"
        );
        assert_eq!(
            stderr("--scatter=3 dev"),
            "flashbench: option '--scatter' doesn't allow an argument\n"
        );
        assert_eq!(
            stderr("dev --count"),
            "flashbench: option '--count' requires an argument\n"
        );
        assert_eq!(
            stderr("dev -c"),
            "flashbench: option requires an argument -- 'c'\n"
        );
        let r = p("-a").unwrap_err();
        assert_eq!(r.stderr, b"flashbench: invalid arguments\n");
        assert_eq!(r.stdout, "");
        assert_eq!(r.status, 234);
        assert_eq!(stderr("-a d1 d2"), "flashbench: invalid arguments\n");
        assert_eq!(stderr("dev"), "flashbench: need at least one action\n");
        assert_eq!(
            stderr("-s --scatter-order=17 dev"),
            "flashbench: scatter_order must be at most 16\n"
        );
        // An option error prints the help text on standard output.
        let r = p("-q dev").unwrap_err();
        assert!(r.stdout.starts_with("flashbench [OPTION]... [DEVICE]\n"));
        // -c takes the device as its value, leaving no device.
        assert_eq!(stderr("-a -c dev"), "flashbench: invalid arguments\n");
        // After "--" everything is a non-option.
        assert_eq!(p("-a -- -dev").unwrap().dev, "-dev");
    }
}
