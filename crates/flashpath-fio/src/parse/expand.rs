//! `${VAR}` substitution and fio's job-file keywords (`$pagesize`, `$mb_memory`,
//! `$ncpus`) with the `bc` arithmetic fio runs on them (integer `+ - * /` and
//! parentheses, evaluated here instead of piping to the external program).

use super::Env;

/// fio's OPT_LEN_MAX: an option line longer than this is cut.
pub const OPT_LEN_MAX: usize = 8192;

/// `fio_option_dup_subs`: replace every `${NAME}` by its value (empty when unset).
/// `$NAME` without braces is left alone.
pub fn env_subst(opt: &str, env: &Env) -> String {
    let mut out = String::with_capacity(opt.len());
    let mut rest = opt;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("${") {
            if let Some(close) = after.find('}') {
                let name = &after[..close];
                if let Some(v) = env.vars.get(name) {
                    if out.len() + v.len() <= OPT_LEN_MAX {
                        out.push_str(v);
                    }
                }
                rest = &after[close + 1..];
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
        if out.len() >= OPT_LEN_MAX {
            break;
        }
    }
    out
}

/// `fio_keyword_replace` + `bc_calc`. `Ok(None)` never happens; `Err` means fio's
/// `bc` step failed (fio then reports "failed parsing").
pub fn keyword_replace(opt: &str, env: &Env) -> Result<String, String> {
    let words = [
        ("$pagesize", env.pagesize.to_string()),
        ("$mb_memory", env.mb_memory.to_string()),
        ("$ncpus", env.ncpus.to_string()),
    ];
    let mut s = opt.to_string();
    let mut docalc = false;
    for (w, rep) in &words {
        if s.contains(w) {
            s = s.replace(w, rep);
            docalc = true;
        }
    }
    if !docalc {
        return Ok(s);
    }
    bc_calc(&s)
}

fn bc_calc(s: &str) -> Result<String, String> {
    if !s.contains(['+', '-', '*', '/']) || s.contains('\'') {
        return Ok(s.to_string());
    }
    let Some(eq) = s.find('=') else {
        return Ok(s.to_string());
    };
    let value = &s[eq + 1..];
    if s.len() >= 128 || value.len() > 100 {
        return Ok(s.to_string());
    }
    match bc_eval(value) {
        Some(v) => Ok(format!("{}{}", &s[..=eq], v)),
        None => Err(format!("bc could not evaluate '{value}'")),
    }
}

/// Integer expression as `bc` (scale=0) evaluates it: `+ - * /`, unary minus,
/// parentheses; division truncates toward zero.
pub fn bc_eval(expr: &str) -> Option<i128> {
    let toks: Vec<u8> = expr.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut p = Bc {
        t: &toks,
        i: 0,
        depth: 0,
    };
    let v = p.expr()?;
    if p.i != toks.len() {
        return None;
    }
    Some(v)
}

struct Bc<'a> {
    t: &'a [u8],
    i: usize,
    depth: u32,
}

impl Bc<'_> {
    fn peek(&self) -> Option<u8> {
        self.t.get(self.i).copied()
    }
    fn expr(&mut self) -> Option<i128> {
        let mut v = self.term()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.term()?;
            v = if c == b'+' {
                v.checked_add(r)?
            } else {
                v.checked_sub(r)?
            };
        }
        Some(v)
    }
    fn term(&mut self) -> Option<i128> {
        let mut v = self.unary()?;
        while let Some(c @ (b'*' | b'/')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            v = if c == b'*' {
                v.checked_mul(r)?
            } else {
                v.checked_div(r)?
            };
        }
        Some(v)
    }
    fn unary(&mut self) -> Option<i128> {
        if self.peek() == Some(b'-') {
            self.i += 1;
            return self.unary()?.checked_neg();
        }
        self.atom()
    }
    fn atom(&mut self) -> Option<i128> {
        if self.peek() == Some(b'(') {
            self.depth += 1;
            if self.depth > 64 {
                return None;
            }
            self.i += 1;
            let v = self.expr()?;
            if self.peek() != Some(b')') {
                return None;
            }
            self.i += 1;
            self.depth -= 1;
            return Some(v);
        }
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if self.i == start || self.i - start > 30 {
            return None;
        }
        std::str::from_utf8(&self.t[start..self.i])
            .ok()?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn env() -> Env {
        let mut vars = BTreeMap::new();
        vars.insert("FOO".to_string(), "bar".to_string());
        Env {
            vars,
            cwd: PathBuf::from("/"),
            ncpus: 4,
            mb_memory: 24105,
            pagesize: 4096,
        }
    }

    #[test]
    fn braces_only() {
        // [V] ${VAR} expanded, unset → empty, $VAR literal.
        assert_eq!(
            env_subst("filename=/mnt/${FOO}.dat", &env()),
            "filename=/mnt/bar.dat"
        );
        assert_eq!(
            env_subst("filename=/mnt/${NOPE}x", &env()),
            "filename=/mnt/x"
        );
        assert_eq!(
            env_subst("filename=/mnt/$FOO.dat", &env()),
            "filename=/mnt/$FOO.dat"
        );
        assert_eq!(env_subst("a=${FOO", &env()), "a=${FOO");
    }

    #[test]
    fn keywords_and_bc() {
        // [V] size=2*$mb_memory → 48210 with 24105 MiB.
        assert_eq!(
            keyword_replace("size=2*$mb_memory", &env()).ok(),
            Some("size=48210".into())
        );
        assert_eq!(
            keyword_replace("bs=$pagesize", &env()).ok(),
            Some("bs=4096".into())
        );
        assert_eq!(
            keyword_replace("numjobs=$ncpus/3", &env()).ok(),
            Some("numjobs=1".into())
        );
        assert_eq!(
            keyword_replace("size=4k-1", &env()).ok(),
            Some("size=4k-1".into())
        );
        assert!(keyword_replace("size=$pagesize-4k", &env()).is_err());
        assert_eq!(bc_eval("(1+2)*3"), Some(9));
        assert_eq!(bc_eval("7/0"), None);
    }
}
