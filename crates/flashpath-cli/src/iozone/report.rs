//! iozone's throughput-mode report, byte for byte as iozone 3.508 prints it
//! (src/current/iozone.c: the splash lines of main(), record_command_line(), the
//! settings main() prints before multi_throughput_test(), and throughput_test()'s block
//! per test), and its arithmetic: times from gettimeofday(2) (microseconds, as
//! time_so_far() turns them into seconds), less the timer resolution; each child's
//! throughput its kB over its own time; the parent's the children's kB over the time
//! from releasing them to the last one's exit.
//!
//! Independent of the engine: it formats what a run measured ([`TestTimes`]), so another
//! engine can drive it.
//!
//! Units: kB (1024 bytes) and kB/sec, as iozone prints them; times in ns on the report's
//! clock (0 is the "Run began" time).

use super::args::{Args, Test};
use std::fmt::Write;

/// The iozone release whose source the format is copied from.
pub const VERSION: &str = "3.508";

/// The build iozone names (the makefile's `linux` target, NAME="linux"), and its MODE
/// for a 64-bit build (__LP64__).
const BUILD: &str = "linux";
const MODE: &str = "\tCompiled for 64 bit mode.";

/// MY_CACHE_SIZE, MY_CACHE_LINE_SIZE and STRIDE: the defaults iozone prints without -S,
/// -L and -j.
const CACHE_BYTES: u64 = 1024 * 1024;
const CACHE_LINE_BYTES: u64 = 32;
const STRIDE: u64 = 17;

/// get_resolution() on Linux: gettimeofday(2) moves in microseconds, so the best
/// difference it sees is 1 us.
pub const TIME_RES: f64 = 1.0 / 1_000_000.0;

/// What a run of one test measured for one child.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChildTimes {
    /// The kB the child counts (its so_far: records done before the stonewall).
    pub actual_kb: u64,
    /// When it started its timer and when it took its time.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What a run of one test measured.
#[derive(Clone, Debug, PartialEq)]
pub struct TestTimes {
    pub test: Test,
    pub children: Vec<ChildTimes>,
    /// The parent's timer: the children released, the last one exited.
    pub parent_start_ns: u64,
    pub parent_end_ns: u64,
}

/// time_so_far(): gettimeofday's seconds and microseconds as a double.
fn time_so_far(ns: u64) -> f64 {
    let us = ns / 1000;
    (us / 1_000_000) as f64 + (us % 1_000_000) as f64 * 0.000001
}

/// The figures of one test block, computed as throughput_test() does.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// Per child: (actual kB, throughput kB/s), in child order.
    pub children: Vec<(f64, f64)>,
    pub total_kilos: f64,
    pub parent: f64,
    pub min_throughput: f64,
    pub max_throughput: f64,
    pub avg_throughput: f64,
    pub min_xfer: f64,
    /// A time was below the timer's resolution (iozone's res_prob).
    pub res_prob: bool,
}

impl Figures {
    pub fn of(t: &TestTimes) -> Figures {
        let mut res_prob = false;
        let mut elapsed = |start: u64, end: u64| {
            let mut s = (time_so_far(end) - time_so_far(start)) - TIME_RES;
            if s < 0.000001 {
                s = TIME_RES;
                res_prob = true;
            }
            s
        };
        let children: Vec<(f64, f64)> = t
            .children
            .iter()
            .map(|c| {
                let actual = c.actual_kb as f64;
                (actual, actual / elapsed(c.start_ns, c.end_ns))
            })
            .collect();
        let total_time = elapsed(t.parent_start_ns, t.parent_end_ns);
        let (mut total_kilos, mut ptotal) = (0.0, 0.0);
        let (mut min_throughput, mut max_throughput, mut min_xfer) = (0.0f64, 0.0f64, 0.0f64);
        // The loop of throughput_test(), quirks included: a minimum of 0 is replaced by
        // the next child's value.
        for &(actual, throughput) in &children {
            total_kilos += throughput;
            ptotal += actual;
            if min_xfer == 0.0 {
                min_xfer = actual;
            }
            if actual < min_xfer {
                min_xfer = actual;
            }
            if min_throughput == 0.0 {
                min_throughput = throughput;
            }
            if throughput < min_throughput {
                min_throughput = throughput;
            }
            if throughput > max_throughput {
                max_throughput = throughput;
            }
        }
        Figures {
            avg_throughput: total_kilos / children.len() as f64,
            parent: ptotal / total_time,
            children,
            total_kilos,
            min_throughput,
            max_throughput,
            min_xfer,
            res_prob,
        }
    }
}

/// Everything iozone prints before the first throughput test: the splash screen, the
/// command line, the settings.
pub fn header(a: &Args, run_began: &str) -> String {
    let mut s = String::new();
    s += "\tIozone: Performance Test of File I/O\n";
    let _ = write!(
        s,
        "\t        Version $Revision: {VERSION} $\n\t{MODE}\n\t\tBuild: {BUILD} \n\n"
    );
    for line in [
        "\tContributors:William Norcott, Don Capps, Isom Crawford, Kirby Collins\n",
        "\t             Al Slater, Scott Rhine, Mike Wisner, Ken Goss\n",
        "\t             Steve Landherr, Brad Smith, Mark Kelly, Dr. Alain CYR,\n",
        "\t             Randy Dunlap, Mark Montague, Dan Million, Gavin Brebner,\n",
        "\t             Jean-Marc Zucconi, Jeff Blomberg, Benny Halevy, Dave Boone,\n",
        "\t             Erik Habbinga, Kris Strecker, Walter Wong, Joshua Root,\n",
        "\t             Fabrice Bacchella, Zhenghua Xue, Qin Li, Darren Sawyer,\n",
        "\t             Vangel Bojaxhi, Ben England, Vikentsi Lapa,\n",
        "\t             Alexey Skidanov, Sudhir Kumar.\n\n",
    ] {
        s += line;
    }
    // ctime(3)'s string ends in a newline; the format adds another.
    let _ = write!(s, "\tRun began: {run_began}\n\n");
    for line in &a.splash {
        s += line;
    }
    s += &command_line(&a.argv);
    s += "\tOutput is in kBytes/sec\n";
    let _ = writeln!(s, "\tTime Resolution = {TIME_RES:1.6} seconds.");
    let _ = writeln!(
        s,
        "\tProcessor cache size set to {} kBytes.",
        CACHE_BYTES / 1024
    );
    let _ = writeln!(
        s,
        "\tProcessor cache line size set to {CACHE_LINE_BYTES} bytes."
    );
    let _ = writeln!(s, "\tFile stride size set to {STRIDE} * record size.");
    let port = a.port();
    if let Some((min, max)) = a.min_max {
        let _ = writeln!(s, "\tMin {port} = {min} ");
        let _ = writeln!(s, "\tMax {port} = {max} ");
    }
    let ports = match (a.num_child > 1, a.threads) {
        (false, _) => port,
        (true, true) => "threads",
        (true, false) => "processes",
    };
    let _ = writeln!(s, "\tThroughput test with {} {ports}", a.num_child);
    s
}

/// record_command_line(): argv[0] and each argument after a space; the saved copy holds
/// 1024 bytes, and an argument that no longer fits ends the line with iozone's note.
fn command_line(argv: &[String]) -> String {
    let mut s = String::from("\tCommand line used:");
    let mut len = 0;
    for arg in std::iter::once("iozone").chain(argv.iter().map(String::as_str)) {
        let _ = write!(s, " {arg}");
        if len + arg.len() < 1024 {
            len += arg.len() + 1;
        } else {
            s += "Command line too long to save completely.\n";
            break;
        }
    }
    s += "\n";
    s
}

/// The first line of a throughput test.
pub fn each_process(a: &Args) -> String {
    format!(
        "\tEach {} writes a {} kByte file in {} kByte records\n",
        a.port(),
        a.file_kb,
        a.record_bytes / 1024
    )
}

/// The words and the "%2lld"/"%lld" of each test's first two lines.
fn test_words(test: Test) -> (&'static str, bool) {
    match test {
        Test::InitialWrite => ("initial writers \t", true),
        Test::Rewrite => ("rewriters \t", true),
        Test::Read => ("readers \t\t", true),
        Test::Reread => ("re-readers \t", false),
        Test::RandomRead => ("random readers \t", false),
        Test::RandomWrite => ("random writers \t", false),
    }
}

/// One test's block: a blank line, the six figures, and with -C a line per child.
pub fn test_block(a: &Args, num_child: u64, t: &TestTimes) -> String {
    let f = Figures::of(t);
    let (words, wide) = test_words(t.test);
    let n = if wide {
        format!("{num_child:2}")
    } else {
        num_child.to_string()
    };
    let port = a.port();
    let mut s = String::from("\n");
    let _ = writeln!(
        s,
        "\tChildren see throughput for {n} {words}= {:10.2} kB/sec",
        f.total_kilos
    );
    let _ = writeln!(
        s,
        "\tParent sees throughput for {n} {words}= {:10.2} kB/sec",
        f.parent
    );
    let _ = writeln!(
        s,
        "\tMin throughput per {port} \t\t\t= {:10.2} kB/sec ",
        f.min_throughput
    );
    let _ = writeln!(
        s,
        "\tMax throughput per {port} \t\t\t= {:10.2} kB/sec",
        f.max_throughput
    );
    let _ = writeln!(
        s,
        "\tAvg throughput per {port} \t\t\t= {:10.2} kB/sec",
        f.avg_throughput
    );
    let _ = writeln!(s, "\tMin xfer \t\t\t\t\t= {:10.2} kB", f.min_xfer);
    if a.show_children {
        for (i, (actual, thr)) in f.children.iter().enumerate() {
            let _ = writeln!(
                s,
                "\tChild[{i}] xfer count = {actual:10.2} kB, Throughput = {thr:10.2} kB/sec"
            );
        }
    }
    s
}

/// The end of the run; `res_prob` is the largest record size (bytes) of a test with a
/// time below the timer's resolution, if any.
pub fn closing(res_prob: Option<u64>) -> String {
    let mut s = String::from("\niozone test complete.\n");
    if let Some(rec) = res_prob {
        s += "Timer resolution is poor. Some small transfers may have \n";
        let _ = writeln!(
            s,
            "reported inaccurate results. Sizes {} kBytes and below.",
            rec / 1024
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iozone::args::parse_line as args;

    /// The text iozone 3.508's printf formats give for the seed's command line,
    /// transcribed from iozone.c (main(): the splash sprintfs, record_command_line(), the
    /// settings printfs; throughput_test(): "Each %s writes a %lld kByte file in %lld
    /// kByte records\n", the random readers' and writers' six printfs; main()'s
    /// "\niozone test complete.\n").
    #[test]
    fn golden_layout_of_the_seed_report() {
        let line = "-r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16";
        let a = args(line);
        // Two children: one ran its 16 records in 1 s of the clock; the other was
        // stopped after 8 records, at 1.5 s (started at 0.5 s).
        let t = |test| TestTimes {
            test,
            children: vec![
                ChildTimes {
                    actual_kb: 64,
                    start_ns: 500_000_000,
                    end_ns: 1_500_000_000,
                },
                ChildTimes {
                    actual_kb: 32,
                    start_ns: 500_000_000,
                    end_ns: 1_500_000_000,
                },
            ],
            parent_start_ns: 500_000_000,
            parent_end_ns: 2_500_000_000,
        };
        let mut out = header(&a, "Thu Jan  1 00:00:00 1970");
        out += &each_process(&a);
        out += &test_block(&a, 16, &t(Test::RandomRead));
        out += &test_block(&a, 16, &t(Test::RandomWrite));
        out += &closing(None);
        // 64 kB / (1 s - 1 us) and 32 kB / (1 s - 1 us); parent 96 kB / (2 s - 1 us).
        let expected = "\tIozone: Performance Test of File I/O
\t        Version $Revision: 3.508 $
\t\tCompiled for 64 bit mode.
\t\tBuild: linux 

\tContributors:William Norcott, Don Capps, Isom Crawford, Kirby Collins
\t             Al Slater, Scott Rhine, Mike Wisner, Ken Goss
\t             Steve Landherr, Brad Smith, Mark Kelly, Dr. Alain CYR,
\t             Randy Dunlap, Mark Montague, Dan Million, Gavin Brebner,
\t             Jean-Marc Zucconi, Jeff Blomberg, Benny Halevy, Dave Boone,
\t             Erik Habbinga, Kris Strecker, Walter Wong, Joshua Root,
\t             Fabrice Bacchella, Zhenghua Xue, Qin Li, Darren Sawyer,
\t             Vangel Bojaxhi, Ben England, Vikentsi Lapa,
\t             Alexey Skidanov, Sudhir Kumar.

\tRun began: Thu Jan  1 00:00:00 1970

\tRecord Size 4 kB
\tNo retest option selected
\tInclude fsync in write timing
\tInclude close in write timing
\tO_DIRECT feature enabled
\tFile size set to 65536 kB
\tCommand line used: iozone -r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16
\tOutput is in kBytes/sec
\tTime Resolution = 0.000001 seconds.
\tProcessor cache size set to 1024 kBytes.
\tProcessor cache line size set to 32 bytes.
\tFile stride size set to 17 * record size.
\tMin process = 16 
\tMax process = 16 
\tThroughput test with 16 processes
\tEach process writes a 65536 kByte file in 4 kByte records

\tChildren see throughput for 16 random readers \t=      96.00 kB/sec
\tParent sees throughput for 16 random readers \t=      48.00 kB/sec
\tMin throughput per process \t\t\t=      32.00 kB/sec 
\tMax throughput per process \t\t\t=      64.00 kB/sec
\tAvg throughput per process \t\t\t=      48.00 kB/sec
\tMin xfer \t\t\t\t\t=      32.00 kB

\tChildren see throughput for 16 random writers \t=      96.00 kB/sec
\tParent sees throughput for 16 random writers \t=      48.00 kB/sec
\tMin throughput per process \t\t\t=      32.00 kB/sec 
\tMax throughput per process \t\t\t=      64.00 kB/sec
\tAvg throughput per process \t\t\t=      48.00 kB/sec
\tMin xfer \t\t\t\t\t=      32.00 kB

iozone test complete.
";
        assert_eq!(out, expected);
    }

    #[test]
    fn narrow_counts_and_the_other_tests() {
        let a = args("-t 1 -i 0 -i 1 -C -T");
        let t = |test| TestTimes {
            test,
            children: vec![ChildTimes {
                actual_kb: 512,
                start_ns: 0,
                end_ns: 2_000_001_000,
            }],
            parent_start_ns: 0,
            parent_end_ns: 2_000_001_000,
        };
        let block = |test| test_block(&a, 1, &t(test));
        assert!(block(Test::InitialWrite).starts_with(
            "\n\tChildren see throughput for  1 initial writers \t=     256.00 kB/sec\n"
        ));
        assert!(block(Test::Rewrite)
            .starts_with("\n\tChildren see throughput for  1 rewriters \t=     256.00 kB/sec\n"));
        assert!(block(Test::Read)
            .starts_with("\n\tChildren see throughput for  1 readers \t\t=     256.00 kB/sec\n"));
        let rr = block(Test::Reread);
        assert!(
            rr.starts_with("\n\tChildren see throughput for 1 re-readers \t=     256.00 kB/sec\n")
        );
        assert!(rr.contains("\tMin throughput per thread \t\t\t=     256.00 kB/sec \n"));
        assert!(
            rr.ends_with("\tChild[0] xfer count =     512.00 kB, Throughput =     256.00 kB/sec\n")
        );
        let h = header(&a, "Thu Jan  1 00:00:00 1970");
        assert!(h.ends_with("\tThroughput test with 1 thread\n"), "{h}");
        assert!(!h.contains("Min thread"));
        assert_eq!(
            each_process(&a),
            "\tEach thread writes a 512 kByte file in 4 kByte records\n"
        );
    }

    #[test]
    fn iozone_minimum_quirk_and_resolution() {
        // A child with 0 kB does not stay the minimum when a later one has more.
        let t = TestTimes {
            test: Test::Read,
            children: vec![
                ChildTimes {
                    actual_kb: 0,
                    start_ns: 0,
                    end_ns: 1_000_000,
                },
                ChildTimes {
                    actual_kb: 8,
                    start_ns: 0,
                    end_ns: 1_000_001_000,
                },
            ],
            parent_start_ns: 0,
            parent_end_ns: 1_000_001_000,
        };
        let f = Figures::of(&t);
        assert_eq!(f.min_xfer, 8.0);
        assert!(
            (f.min_throughput - 8.0).abs() < 1e-9,
            "{}",
            f.min_throughput
        );
        assert!(!f.res_prob);
        let t0 = TestTimes {
            children: vec![ChildTimes {
                actual_kb: 4,
                start_ns: 10,
                end_ns: 900,
            }],
            parent_end_ns: 900,
            ..t
        };
        let f = Figures::of(&t0);
        assert!(f.res_prob);
        assert_eq!(f.children[0].1, 4.0 / TIME_RES);
        assert!(closing(Some(4096)).ends_with("Sizes 4 kBytes and below.\n"));
    }

    #[test]
    fn a_long_command_line_is_cut_as_iozone_cuts_it() {
        let mut argv = vec!["-t".to_string(), "200".to_string(), "-i".into(), "0".into()];
        argv.push("-F".into());
        argv.extend((0..200).map(|i| format!("file-number-{i:04}")));
        let s = command_line(&argv);
        assert!(s.ends_with("Command line too long to save completely.\n\n"));
        assert!(!s.contains("file-number-0199"));
    }
}
