//! fio compares percentile thresholds in x87 `long double`; `percentile_reached`
//! emulates that. The table was produced by a C program compiled with gcc on x86-64
//! (`ceill((long double) p / 100.0 * n)` for each line's p and n).

use flashpath_hist::percentile_reached;

#[test]
fn thresholds_match_gcc_long_double() {
    let table = include_str!("data/ld_thresholds.txt");
    let mut checked = 0;
    for line in table.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let p: f64 = f[0].parse().unwrap();
        let n: u64 = f[1].parse().unwrap();
        let c: u128 = f[2].parse().unwrap();
        if c > u64::MAX as u128 {
            assert!(!percentile_reached(u64::MAX, p, n), "{line}");
            continue;
        }
        let c = c as u64;
        assert!(percentile_reached(c, p, n), "{line}: {c} should reach");
        if c > 0 {
            assert!(
                !percentile_reached(c - 1, p, n),
                "{line}: {} should not reach",
                c - 1
            );
        }
        checked += 1;
    }
    assert!(checked > 3000);
}
