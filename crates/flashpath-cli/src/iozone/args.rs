//! iozone's command line, parsed as iozone 3.508's `main()` parses it (src/current/iozone.c):
//! getopt(3) with the option string below, so options cluster (`-ecI` is `-e -c -I`), an
//! option's value may be attached or follow (`-i2`, `-i 2`), `-+n` is the option `+` with
//! the value `n`, and `-F` takes as many following arguments as the largest process count
//! given so far (`maxt`).
//!
//! What flashpath models: the throughput mode (`-t`, `-l`, `-u`) with `-r`, `-s`, `-i 0|1|2`,
//! `-F`, `-I`, `-e`, `-c`, `-w`, `-x`, `-C`, `-T` and `-+n`. Any other option iozone knows
//! is an error naming it; so are options iozone does not know, arguments that are not
//! options, and values iozone would take silently in a surprising way (a value that is
//! not a number, a file name that looks like an option). Where iozone itself stops with
//! a message, the error says what iozone says. Values iozone clamps (`-t 0` runs 8
//! processes, `-s 0` a 512 kB file, `-r 0` 4 kB records) are clamped the same way.
//!
//! Sizes: `-s` is in kB (1024 bytes) unless it ends in k, m or g; `-r` likewise.

use anyhow::{bail, Result};

/// iozone 3.508's getopt option string (main()).
pub const OPTSTRING: &str =
    "ZQNIBDGCTOMREWovAxamwphcezKJ:j:k:V:r:t:s:f:F:d:l:u:U:S:L:H:+:P:i:b:X:Y:g:n:y:q: ";

/// The letters iozone 3.508 accepts after `-+` (main(), `case '+'`).
const PLUS_LETTERS: &str = "aQbFMRchmNusdexiptrAnkqDlLJVBETXZUKwyCSWHPzO";

/// MAXSTREAMS: the most processes a throughput test may run.
pub const MAX_STREAMS: u64 = 1024;

/// MAXBUFFERSIZE: the largest record.
pub const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// The file size of a throughput test without `-s` (KILOBYTES), in kB.
pub const DEFAULT_FILE_KB: u64 = 512;

/// The record size without `-r`.
pub const DEFAULT_RECORD_BYTES: u64 = 4096;

/// The throughput tests flashpath models, in the order iozone's throughput_test() runs
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Test {
    /// `-i 0`: thread_write_test.
    InitialWrite,
    /// `-i 0` without `-+n`: thread_rwrite_test.
    Rewrite,
    /// `-i 1`: thread_read_test.
    Read,
    /// `-i 1` without `-+n`: thread_rread_test.
    Reread,
    /// `-i 2`: thread_ranread_test.
    RandomRead,
    /// `-i 2`: thread_ranwrite_test.
    RandomWrite,
}

impl Test {
    /// Whether the test writes.
    pub fn writes(self) -> bool {
        matches!(self, Test::InitialWrite | Test::Rewrite | Test::RandomWrite)
    }

    /// Whether the test takes its records in iozone's shuffled order.
    pub fn random(self) -> bool {
        matches!(self, Test::RandomRead | Test::RandomWrite)
    }
}

/// A parsed iozone command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    /// The iozone arguments as given (argv[1..]), for "Command line used".
    pub argv: Vec<String>,
    /// The lines iozone saves for its splash screen while parsing, in order, each as
    /// printed (a leading tab, a trailing newline).
    pub splash: Vec<String>,
    /// reclen, bytes.
    pub record_bytes: u64,
    /// kilobytes64: the file size, kB.
    pub file_kb: u64,
    /// include_test[0..3]: `-i 0`, `-i 1`, `-i 2`.
    pub include: [bool; 3],
    /// `-+n`: no rewrite, no re-read.
    pub noretest: bool,
    /// `-e`: fsync in the timing.
    pub include_flush: bool,
    /// `-c`: close in the timing.
    pub include_close: bool,
    /// `-I`: O_DIRECT.
    pub direct: bool,
    /// `-w`: keep the files.
    pub no_unlink: bool,
    /// `-T`: POSIX threads instead of processes.
    pub threads: bool,
    /// Stonewalling (on unless `-x`).
    pub stonewall: bool,
    /// `-C`: each child's transfer count and throughput.
    pub show_children: bool,
    /// The process counts of the throughput tests, in the order iozone runs them
    /// (multi_throughput_test: the `-t` values, else `-l` to `-u`).
    pub counts: Vec<u64>,
    /// num_child when parsing ends: the count "Throughput test with" names.
    pub num_child: u64,
    /// (mint, maxt) when `-l` or `-u` was given: the "Min process"/"Max process" lines.
    pub min_max: Option<(u64, u64)>,
    /// `-F` names (maxt of them), empty without `-F`.
    pub files: Vec<String>,
}

impl Args {
    /// The tests to run, in iozone's order.
    pub fn tests(&self) -> Vec<Test> {
        let mut t = Vec::new();
        if self.include[0] {
            t.push(Test::InitialWrite);
            if !self.noretest {
                t.push(Test::Rewrite);
            }
        }
        if self.include[1] {
            t.push(Test::Read);
            if !self.noretest {
                t.push(Test::Reread);
            }
        }
        if self.include[2] {
            t.push(Test::RandomRead);
            t.push(Test::RandomWrite);
        }
        t
    }

    /// numrecs64: records per file.
    pub fn records(&self) -> u64 {
        self.file_kb * 1024 / self.record_bytes
    }

    /// "process" or "thread" (the singular iozone's reports use).
    pub fn port(&self) -> &'static str {
        if self.threads {
            "thread"
        } else {
            "process"
        }
    }
}

/// iozone's test numbers (-i) and what they are, for the errors on those flashpath does
/// not model (the Linux build: HAVE_PREAD, no HAVE_PREADV).
fn test_name(n: i64) -> Option<&'static str> {
    Some(match n {
        3 => "read backwards",
        4 => "re-write record",
        5 => "stride read",
        6 => "fwrite/re-fwrite",
        7 => "fread/re-fread",
        8 => "random mix",
        9 => "pwrite/re-pwrite",
        10 => "pread/re-pread",
        _ => return None,
    })
}

/// A size with iozone's suffixes: a number, then k, m or g (or nothing: `unit_bytes`).
fn size_bytes(opt: char, v: &str, unit_bytes: u64) -> Result<i128> {
    let (digits, mult) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 1024),
        Some((i, 'm' | 'M')) => (&v[..i], 1024 * 1024),
        Some((i, 'g' | 'G')) => (&v[..i], 1024 * 1024 * 1024),
        _ => (v, unit_bytes),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 15 {
        bail!("-{opt} {v}: not a size (a number of kB, or a number ending in k, m or g)");
    }
    let n: i128 = digits.parse().expect("checked digits");
    Ok(n * mult as i128)
}

/// atoi's number, refusing what atoi would read as 0 or a prefix.
fn number(opt: &str, v: &str) -> Result<i64> {
    match v.parse::<i64>() {
        Ok(n) if n.unsigned_abs() < 1 << 31 => Ok(n),
        _ => bail!("-{opt} {v}: not a number"),
    }
}

/// Parses a line of space-separated arguments (tests).
#[cfg(test)]
pub(crate) fn parse_line(line: &str) -> Args {
    let v: Vec<String> = line.split_whitespace().map(String::from).collect();
    parse(&v).unwrap()
}

/// Parses iozone's arguments (without the program name).
pub fn parse(argv: &[String]) -> Result<Args> {
    parse_inner(argv).map_err(|e| anyhow::anyhow!("iozone: {e}"))
}

fn parse_inner(argv: &[String]) -> Result<Args> {
    let mut a = Args {
        argv: argv.to_vec(),
        splash: Vec::new(),
        record_bytes: DEFAULT_RECORD_BYTES,
        file_kb: DEFAULT_FILE_KB,
        include: [false; 3],
        noretest: false,
        include_flush: false,
        include_close: false,
        direct: false,
        no_unlink: false,
        threads: false,
        stonewall: true,
        show_children: false,
        counts: Vec::new(),
        num_child: 0,
        min_max: None,
        files: Vec::new(),
    };
    let (mut mint, mut maxt) = (0u64, 0u64);
    let (mut lflag, mut uflag, mut trflag) = (false, false, false);
    let mut t_range: Vec<u64> = Vec::new();
    let (mut r_count, mut s_count, mut include_tflag) = (0, 0, false);
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if arg == "--" {
            if let Some(extra) = argv.get(i) {
                bail!("unexpected argument '{extra}' (iozone takes only options)");
            }
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            bail!(
                "unexpected argument '{arg}' (iozone takes only options; -F takes the file names)"
            );
        }
        let chars: Vec<(usize, char)> = arg.char_indices().skip(1).collect();
        let mut k = 0;
        while k < chars.len() {
            let (pos, c) = chars[k];
            k += 1;
            let spec = OPTSTRING.find(c).filter(|_| c != ':');
            let Some(at) = spec else {
                bail!("-{c} is not an iozone option");
            };
            let takes_value = OPTSTRING[at + c.len_utf8()..].starts_with(':');
            let mut attached = false;
            let value = if takes_value {
                let rest = &arg[pos + c.len_utf8()..];
                k = chars.len();
                if !rest.is_empty() {
                    attached = true;
                    Some(rest.to_string())
                } else if let Some(v) = argv.get(i) {
                    i += 1;
                    Some(v.clone())
                } else {
                    bail!("option -{c} requires an argument");
                }
            } else {
                None
            };
            let v = value.as_deref().unwrap_or("");
            match c {
                'r' => {
                    r_count += 1;
                    let mut reclen = size_bytes('r', v, 1024)?;
                    if reclen <= 0 {
                        reclen = DEFAULT_RECORD_BYTES as i128;
                    }
                    if reclen > MAX_RECORD_BYTES as i128 {
                        bail!(
                            "-r {v}: maximum record size {} kB is greater than maximum buffer size {} kB",
                            reclen / 1024,
                            MAX_RECORD_BYTES / 1024
                        );
                    }
                    a.record_bytes = reclen as u64;
                    a.splash
                        .push(format!("\tRecord Size {} kB\n", a.record_bytes / 1024));
                }
                's' => {
                    s_count += 1;
                    let mut kb = size_bytes('s', v, 1024)? / 1024;
                    if kb <= 0 {
                        kb = DEFAULT_FILE_KB as i128;
                    }
                    if kb > 1 << 40 {
                        bail!("-s {v}: file size too large");
                    }
                    a.file_kb = kb as u64;
                    a.splash
                        .push(format!("\tFile size set to {} kB\n", a.file_kb));
                }
                'i' => {
                    let n = number("i", v)?.max(0);
                    match n {
                        0..=2 => a.include[n as usize] = true,
                        _ => match test_name(n) {
                            Some(name) => bail!(
                                "-i {n} ({name}) is not modelled by flashpath (-i 0, 1 and 2 are)"
                            ),
                            None => bail!("-i {n}: iozone has no such test (0 to 10)"),
                        },
                    }
                    include_tflag = true;
                }
                't' => {
                    let mut n = number("t", v)?;
                    if n > MAX_STREAMS as i64 {
                        bail!("-t {v}: invalid options: maximum streams for throughput is {MAX_STREAMS}");
                    }
                    if n <= 0 {
                        n = 8; // iozone's choice for -t 0 and below
                    }
                    a.num_child = n as u64;
                    t_range.push(a.num_child);
                    maxt = maxt.max(a.num_child);
                    trflag = true;
                }
                'l' => {
                    let n = number("l", v)?;
                    if n <= 0 {
                        mint = 1;
                        a.num_child = 1;
                    } else {
                        mint = n as u64;
                        a.num_child = mint;
                    }
                    if mint > MAX_STREAMS {
                        bail!("-l {v}: invalid options: maximum streams for throughput is {MAX_STREAMS}");
                    }
                    lflag = true;
                    trflag = true;
                }
                'u' => {
                    let n = number("u", v)?;
                    maxt = if n <= 0 { 1 } else { n as u64 };
                    if maxt > MAX_STREAMS {
                        bail!("-u {v}: invalid options: maximum streams for throughput is {MAX_STREAMS}");
                    }
                    uflag = true;
                    trflag = true;
                }
                'F' => {
                    if !trflag {
                        bail!("-F: invalid options: must specify -t N before -F");
                    }
                    if attached {
                        bail!(
                            "-F{v}: -F takes its file names as separate arguments (-F f1 f2 ...)"
                        );
                    }
                    if maxt == 0 {
                        // Only -l so far: iozone would take no names and ignore the rest.
                        bail!("-F: iozone takes as many names as the -t or -u before it asks for, and none came before -F");
                    }
                    // getopt gave the first name as the value; iozone steps back and
                    // takes maxt names from there.
                    i -= 1;
                    let names = &argv[i..argv.len().min(i + maxt as usize)];
                    if let Some(bad) = names.iter().find(|n| n.starts_with('-')) {
                        bail!(
                            "-F: '{bad}' is not a file name: -F takes {maxt} names (one per process)"
                        );
                    }
                    if (names.len() as u64) < maxt {
                        bail!(
                            "-F: invalid options: not enough filenames for {maxt} streams ({} given)",
                            names.len()
                        );
                    }
                    a.files = names.to_vec();
                    i += names.len();
                }
                'I' => {
                    a.direct = true;
                    a.splash.push("\tO_DIRECT feature enabled\n".into());
                }
                'e' => {
                    a.include_flush = true;
                    a.splash.push("\tInclude fsync in write timing\n".into());
                }
                'c' => {
                    a.include_close = true;
                    a.splash.push("\tInclude close in write timing\n".into());
                }
                'w' => {
                    a.no_unlink = true;
                    a.splash.push("\tSetting no_unlink\n".into());
                }
                'x' => {
                    a.stonewall = false;
                    a.splash.push("\tStonewall disabled\n".into());
                }
                'C' => a.show_children = true,
                'T' => a.threads = true,
                '+' => {
                    let mut letters = v.chars();
                    match (letters.next(), letters.next()) {
                        (Some('n'), None) => {
                            a.noretest = true;
                            a.splash.push("\tNo retest option selected\n".into());
                        }
                        (Some(p), None) if PLUS_LETTERS.contains(p) => {
                            bail!("option -+{p} is not modelled by flashpath")
                        }
                        (Some(p), None) => bail!("-+{p} is not an iozone option"),
                        (None, _) => bail!("option -+ requires a letter"),
                        (Some(_), Some(_)) => {
                            bail!("-+{v}: a -+ option is one letter (iozone reads only the first)")
                        }
                    }
                }
                ' ' => bail!("-' ' is not an iozone option"),
                other => bail!("option -{other} is not modelled by flashpath"),
            }
        }
    }
    if !trflag {
        bail!("flashpath models iozone's throughput mode: give -t N (or -l/-u)");
    }
    if r_count > 1 || s_count > 1 {
        let opt = if r_count > 1 { 'r' } else { 's' };
        bail!(
            "-{opt} given more than once: iozone then runs its auto mode, and it can not mix throughput mode and auto-mode flags"
        );
    }
    if !include_tflag {
        bail!(
            "no -i: iozone would run every test; flashpath models -i 0, -i 1 and -i 2, give them"
        );
    }
    if !t_range.is_empty() && (lflag || uflag) {
        let t = t_range[0];
        let same = t_range.len() == 1 && (!lflag || mint == t) && (!uflag || maxt == t);
        if !same {
            bail!(
                "-t with -l/-u: give -l and -u the same number as one -t (iozone then runs the -t counts but reports -l/-u), or use -l/-u without -t"
            );
        }
    }
    // main(): -u without -l starts at one process; -l without -u runs that count.
    if uflag && !lflag {
        mint = 1;
        a.num_child = 1;
    }
    if lflag && !uflag {
        maxt = mint;
    }
    if mint > maxt && t_range.is_empty() {
        bail!("-l {mint} is above -u {maxt}");
    }
    a.counts = if t_range.is_empty() {
        (mint..=maxt).collect()
    } else {
        t_range
    };
    if lflag || uflag {
        a.min_max = Some((mint, maxt));
    }
    if a.records() == 0 {
        bail!(
            "the file ({} kB) is smaller than one record ({} kB)",
            a.file_kb,
            a.record_bytes / 1024
        );
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<Args> {
        let v: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&v)
    }

    fn err(line: &str) -> String {
        p(line).expect_err(line).to_string()
    }

    #[test]
    fn the_seed_line_clusters_as_getopt_does() {
        let files: Vec<String> = (1..=16).map(|i| format!("f{i}")).collect();
        let a = p(&format!(
            "-r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F {}",
            files.join(" ")
        ))
        .unwrap();
        assert_eq!(a.record_bytes, 4096);
        assert_eq!(a.file_kb, 65536);
        assert_eq!(a.records(), 16384);
        assert_eq!(a.include, [false, false, true]);
        assert!(a.noretest && a.include_flush && a.include_close && a.direct);
        assert!(a.stonewall && !a.threads && !a.no_unlink);
        assert_eq!(a.counts, vec![16]);
        assert_eq!(a.num_child, 16);
        assert_eq!(a.min_max, Some((16, 16)));
        assert_eq!(a.files, files);
        assert_eq!(a.tests(), vec![Test::RandomRead, Test::RandomWrite]);
        assert_eq!(
            a.splash,
            vec![
                "\tRecord Size 4 kB\n",
                "\tNo retest option selected\n",
                "\tInclude fsync in write timing\n",
                "\tInclude close in write timing\n",
                "\tO_DIRECT feature enabled\n",
                "\tFile size set to 65536 kB\n",
            ]
        );
    }

    #[test]
    fn values_attach_or_follow_and_sizes_take_suffixes() {
        let a = p("-t2 -s 100 -r8 -i 0 -i1 -+ n").unwrap();
        assert_eq!((a.file_kb, a.record_bytes), (100, 8192));
        assert_eq!(a.include, [true, true, false]);
        assert!(a.noretest);
        assert_eq!(p("-t 1 -i 0 -s 2g -r 1m").unwrap().file_kb, 2 << 20);
        assert_eq!(p("-t 1 -i 0 -s 64K").unwrap().file_kb, 64);
        // The value of the last option of a cluster may be attached: -Ii0.
        assert_eq!(p("-t 1 -Ii0").unwrap().include, [true, false, false]);
        assert_eq!(
            p("-t 1 -i 0 -i 1").unwrap().tests(),
            vec![Test::InitialWrite, Test::Rewrite, Test::Read, Test::Reread]
        );
    }

    #[test]
    fn iozone_clamps_are_kept() {
        assert_eq!(p("-t 0 -i 0").unwrap().counts, vec![8]);
        assert_eq!(p("-t 1 -i 0 -s 0").unwrap().file_kb, 512);
        assert_eq!(p("-t 1 -i 0 -r 0").unwrap().record_bytes, 4096);
        let a = p("-t 1 -i 0").unwrap();
        assert_eq!((a.file_kb, a.record_bytes), (512, 4096));
    }

    #[test]
    fn process_ranges() {
        let a = p("-l 2 -u 4 -i 0").unwrap();
        assert_eq!(a.counts, vec![2, 3, 4]);
        assert_eq!((a.num_child, a.min_max), (2, Some((2, 4))));
        let a = p("-u 3 -i 0").unwrap();
        assert_eq!((a.counts.clone(), a.num_child), (vec![1, 2, 3], 1));
        assert_eq!(p("-l 5 -i 0").unwrap().counts, vec![5]);
        assert_eq!(p("-t 2 -t 4 -i 0").unwrap().counts, vec![2, 4]);
    }

    #[test]
    fn f_takes_maxt_names() {
        let a = p("-t 2 -F a b -i 0").unwrap();
        assert_eq!(a.files, vec!["a", "b"]);
        let a = p("-t 2 -IF a b -i0").unwrap();
        assert_eq!(a.files, vec!["a", "b"]);
        assert!(a.direct);
    }

    #[test]
    fn errors_name_the_option() {
        assert_eq!(
            err("-t 1 -i 0 -X x"),
            "iozone: option -X is not modelled by flashpath"
        );
        assert_eq!(
            err("-t 1 -i 0 -j 3"),
            "iozone: option -j is not modelled by flashpath"
        );
        assert_eq!(err("-t 1 -i 0 -1"), "iozone: -1 is not an iozone option");
        assert_eq!(
            err("-t 1 -i 0 -+m f"),
            "iozone: option -+m is not modelled by flashpath"
        );
        assert_eq!(err("-t 1 -i 0 -+%"), "iozone: -+% is not an iozone option");
        assert_eq!(
            err("-t 1 -i 0 -r"),
            "iozone: option -r requires an argument"
        );
        assert_eq!(
            err("-t 1 -i 0 -s 12q"),
            "iozone: -s 12q: not a size (a number of kB, or a number ending in k, m or g)"
        );
        assert!(err("-t 1 -i 3").contains("-i 3 (read backwards) is not modelled"));
        assert!(err("-t 1 -i 0 -r 32m").contains("maximum record size 32768 kB"));
        assert!(err("-t 4 -i 0 -F a b").contains("not enough filenames for 4 streams"));
        assert!(err("-t 3 -F a b -s 1m -i 0").contains("'-s' is not a file name"));
        assert!(err("-F a -t 1 -i 0").contains("must specify -t N before -F"));
        assert!(err("-l 2 -F a b -i 0").contains("none came before -F"));
        assert_eq!(p("-l 2 -u 2 -F a b -i 0").unwrap().files, vec!["a", "b"]);
        assert!(err("-t 1 -i 0 foo").contains("unexpected argument 'foo'"));
        assert!(err("-i 0 -s 1m").contains("throughput mode"));
        assert!(err("-t 1 -s 1m").contains("no -i"));
        assert!(err("-t 8 -l 4 -i 0").contains("-t with -l/-u"));
        assert!(err("-t 1 -i 0 -s 1m -s 2m").contains("auto mode"));
        assert!(err("-t 2000 -i 0").contains("maximum streams"));
        assert!(err("-t 1 -i 0 -s 1k -r 4k").contains("smaller than one record"));
        assert!(err("-l 4 -u 2 -i 0").contains("above -u"));
        assert!(err("-t x -i 0").contains("-t x: not a number"));
        assert!(err("-t 1 -i 0 -+nx").contains("one letter"));
    }
}
