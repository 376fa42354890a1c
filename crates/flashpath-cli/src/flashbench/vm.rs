//! flashbench's little virtual machine (vm.c), which runs its write tests (`-O`, `-f`)
//! and the demo (`-p`): a test is an array of operations interpreted recursively, each
//! series operation calling its child once per offset or length and collecting the
//! child's results, reductions folding them, `FORMAT`/`PRINTF` printing them.
//!
//! This is a port, operation for operation, of flashbench 62's vm.c, kept as close as
//! its behaviour needs: the same call order (so `-v`'s "call ..." trace lines are the
//! same), the same result typing and printing (7-byte strings and the spaces `PRINTF`
//! puts after them), the same C integer arithmetic (`unsigned int` offsets that wrap at
//! 4 GiB, `size_t` lengths), and the same messages where a program goes wrong (e.g. "need
//! .num= argument" for `-O --offset=0`, "cannot fill ... byte chunks" when the erase
//! size is not a power-of-two multiple of the block size), printed on standard output as
//! vm.c prints them, after which flashbench goes on with its next test.
//!
//! Results: C's `res_t` is a tagged union (an integer, a 7-character string, or a
//! pointer to an array with its element type in the pointer's low bits); [`Res`] is its
//! enum. Arrays are shared (`Rc`), as C shares the pointer between an operation and its
//! parent.

use super::bench::{Clock, Halt, Out};
use super::cfmt::{cut7, g};
use super::lfsr::off_rand_order;
use std::cell::RefCell;
use std::rc::Rc;

/// vm.h's `enum resulttype` (printed as numbers in vm.c's messages).
pub type RType = u8;
const R_NONE: RType = 0;
const R_ARRAY: RType = 1;
const R_NS: RType = 2;
const R_BYTE: RType = 3;
const R_BPS: RType = 4;
const R_STRING: RType = 5;

/// vm.h's opcodes (their order is vm.c's syntax table's). flashbench's programs use
/// most of them; the rest stay for the syntax table's names and checks.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    End,
    Read,
    WriteZero,
    WriteOne,
    WriteRand,
    Erase,
    Length,
    Offset,
    Print,
    Printf,
    Format,
    Newline,
    Bps,
    Sequence,
    Repeat,
    OffFixed,
    OffPow2,
    OffLin,
    OffRand,
    LenFixed,
    LenPow2,
    MaxPow2,
    MaxLin,
    Reduce,
    Drop,
}

const P_NUM: u8 = 1;
const P_VAL: u8 = 2;
const P_STRING: u8 = 4;
const P_AGGREGATE: u8 = 8;

impl Code {
    /// vm.c's syntax table: the name and the parameters an operation must have.
    fn syntax(self) -> (&'static str, u8) {
        use Code::*;
        match self {
            End => ("END", 0),
            Read => ("READ", 0),
            WriteZero => ("WRITE_ZERO", 0),
            WriteOne => ("WRITE_ONE", 0),
            WriteRand => ("WRITE_RAND", 0),
            Erase => ("ERASE", 0),
            Length => ("LENGTH", 0),
            Offset => ("OFFSET", 0),
            Print => ("PRINT", P_STRING),
            Printf => ("PRINTF", 0),
            Format => ("FORMAT", 0),
            Newline => ("NEWLINE", 0),
            Bps => ("BPS", 0),
            Sequence => ("SEQUENCE", P_NUM),
            Repeat => ("REPEAT", P_NUM),
            OffFixed => ("OFF_FIXED", P_VAL),
            OffPow2 => ("OFF_POW2", P_NUM | P_VAL),
            OffLin => ("OFF_LIN", P_NUM | P_VAL),
            OffRand => ("OFF_RAND", P_NUM | P_VAL),
            LenFixed => ("LEN_FIXED", P_VAL),
            LenPow2 => ("LEN_POW2", P_NUM | P_VAL),
            MaxPow2 => ("MAX_POW2", P_NUM | P_VAL),
            MaxLin => ("MAX_LIN", P_NUM | P_VAL),
            Reduce => ("REDUCE", P_AGGREGATE),
            Drop => ("DROP", 0),
        }
    }
}

/// vm.h's aggregations (`A_NONE` = 0 means "no aggregate"; flashbench's programs use
/// MAXIMUM and AVERAGE).
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    None,
    Minimum,
    Maximum,
    Average,
    Total,
}

type Array = Rc<RefCell<Vec<Res>>>;

/// C's `res_t`.
#[derive(Clone, Debug)]
pub enum Res {
    /// All bits zero (`res_null`).
    Null,
    L(i64),
    /// `char s[8]`, NUL-terminated.
    S([u8; 8]),
    /// A pointer to an array, with the element type in its low bits.
    Arr(Array, RType),
}

impl Res {
    /// `res_type()`: the low three bits.
    fn rtype(&self) -> RType {
        match self {
            Res::Null => R_NONE,
            Res::L(v) => (*v & 7) as RType,
            Res::S(s) => s[0] & 7,
            Res::Arr(_, t) => *t,
        }
    }

    /// Whether `res_ptr()` is non-NULL.
    fn has_ptr(&self) -> bool {
        match self {
            Res::Null => false,
            Res::L(v) => *v & !7 != 0,
            Res::S(s) => u64::from_le_bytes(*s) & !7 != 0,
            Res::Arr(..) => true,
        }
    }

    fn l(&self) -> i64 {
        match self {
            Res::L(v) => *v,
            Res::S(s) => i64::from_le_bytes(*s),
            _ => 0,
        }
    }

    /// `.l == res_null.l`: the eight bytes are zero.
    fn is_zero(&self) -> bool {
        match self {
            Res::Null => true,
            Res::L(v) => *v == 0,
            Res::S(s) => *s == [0; 8],
            Res::Arr(..) => false,
        }
    }

    /// The string of an `s` member, up to its NUL.
    fn text(&self) -> Vec<u8> {
        match self {
            Res::S(s) => s.iter().take_while(|&&c| c != 0).copied().collect(),
            Res::L(v) => v
                .to_le_bytes()
                .iter()
                .take_while(|&&c| c != 0)
                .copied()
                .collect(),
            _ => Vec::new(),
        }
    }

    fn array(&self) -> Option<Array> {
        match self {
            Res::Arr(a, _) => Some(a.clone()),
            _ => None,
        }
    }
}

/// vm.h's `struct operation`: the program's fields and the run's result fields.
#[derive(Clone, Debug)]
pub struct Op {
    pub code: Code,
    pub num: u32,
    pub val: i64,
    pub string: Option<&'static str>,
    pub aggregate: Agg,
    result: Res,
    size_x: u32,
    size_y: u32,
    r_type: RType,
}

/// An operation as a C initialiser writes it: `{code, num, val}` with the rest zero.
pub fn op(code: Code, num: u32, val: i64) -> Op {
    Op {
        code,
        num,
        val,
        string: None,
        aggregate: Agg::None,
        result: Res::Null,
        size_x: 0,
        size_y: 0,
        r_type: R_NONE,
    }
}

/// `{O_REDUCE, .aggregate = a}`.
pub fn reduce(a: Agg) -> Op {
    let mut o = op(Code::Reduce, 0, 0);
    o.aggregate = a;
    o
}

/// The most results one series may collect here (flashbench allocates `num` of them
/// with calloc; flashpath keeps memory bounded).
pub const MAX_SERIES: u32 = 1 << 20;

/// `flashbench.c`'s `find_order(large, small)`: 1 + the doublings of `small` to reach
/// `large` (`unsigned int` arithmetic).
pub fn find_order(large: u32, mut small: u32) -> u32 {
    let mut o = 1;
    while small < large {
        small = small.wrapping_shl(1);
        o += 1;
        assert!(
            o < 64,
            "find_order({large}, ..) would not end; callers check"
        );
    }
    o
}

/// `try_open_au()`'s program.
pub fn open_au_program(
    erasesize: u32,
    blocksize: u32,
    count: u32,
    offset: u64,
    random: bool,
) -> Vec<Op> {
    use Code::*;
    vec![
        op(
            LenPow2,
            find_order(erasesize, blocksize),
            -(blocksize as i64),
        ),
        op(Sequence, 3, 0),
        op(Drop, 0, 0),
        op(Printf, 0, 0),
        op(Format, 0, 0),
        op(Length, 0, 0),
        op(OffFixed, 0, offset as i64),
        op(Drop, 0, 0),
        op(Printf, 0, 0),
        op(Format, 0, 0),
        op(Bps, 0, 0),
        reduce(Agg::Maximum),
        op(Repeat, 1, 0),
        reduce(Agg::Average),
        op(
            if random { OffRand } else { OffLin },
            erasesize / blocksize,
            -1,
        ),
        reduce(Agg::Average),
        op(OffRand, count, 12u32.wrapping_mul(erasesize) as i64),
        op(WriteRand, 0, 0),
        op(Newline, 0, 0),
        op(End, 0, 0),
        op(End, 0, 0),
    ]
}

/// `try_find_fat()`'s program.
pub fn find_fat_program(erasesize: u32, blocksize: u32, count: u32, random: bool) -> Vec<Op> {
    use Code::*;
    vec![
        op(
            LenPow2,
            find_order(erasesize, blocksize),
            -(blocksize as i64),
        ),
        op(Sequence, 3, 0),
        op(Drop, 0, 0),
        op(Printf, 0, 0),
        op(Format, 0, 0),
        op(Length, 0, 0),
        op(Printf, 0, 0),
        op(Format, 0, 0),
        op(OffLin, count, erasesize as i64),
        reduce(Agg::Maximum),
        op(Repeat, 1, 0),
        op(Bps, 0, 0),
        reduce(Agg::Average),
        op(
            if random { OffRand } else { OffLin },
            erasesize / blocksize,
            -1,
        ),
        op(WriteRand, 0, 0),
        op(Newline, 0, 0),
        op(End, 0, 0),
        op(End, 0, 0),
    ]
}

/// `try_program()`'s program (`-p`): for 13 sizes from 2 MiB down to 512 B, the mean
/// throughput over the 4 MiB at 16 MiB of linear writes of 0x00, 0xff, 0x5a, linear
/// reads, then the same in LFSR order.
pub fn demo_program() -> Vec<Op> {
    use Code::*;
    let mut p = vec![
        op(LenPow2, 13, -512),
        op(Sequence, 3, 0),
        op(Drop, 0, 0),
        op(Printf, 0, 0),
        op(Format, 0, 0),
        op(Length, 0, 0),
        op(OffFixed, 0, 1024 * 4096 * 4),
        op(Drop, 0, 0),
        op(Printf, 0, 0),
        op(Sequence, 8, 0),
    ];
    for (order, access) in [
        (OffLin, WriteZero),
        (OffLin, WriteOne),
        (OffLin, WriteRand),
        (OffLin, Read),
        (OffRand, WriteZero),
        (OffRand, WriteOne),
        (OffRand, WriteRand),
        (OffRand, Read),
    ] {
        p.extend([
            op(Format, 0, 0),
            reduce(Agg::Average),
            op(Bps, 0, 0),
            op(order, 8192, -1),
            op(access, 0, 0),
        ]);
    }
    p.extend([
        op(End, 0, 0),
        op(Newline, 0, 0),
        op(End, 0, 0),
        op(End, 0, 0),
    ]);
    p
}

/// One run of a program: vm.c's functions over the operation array.
pub struct Vm<'c, 'p, 'o> {
    pub ops: Vec<Op>,
    pub clock: &'c mut Clock<'p>,
    pub out: &'o mut Out,
    pub verbose: bool,
}

/// A vm.c function's answer: the next operation, `None` for C's NULL (an error, already
/// printed), or a halt of the whole run.
type Next = Result<Option<usize>, Halt>;

impl Vm<'_, '_, '_> {
    fn say(&mut self, s: &str) {
        self.out.print(s.as_bytes());
    }

    /// `return_err(...)`: the message on standard output, then NULL.
    fn fail(&mut self, s: &str) -> Next {
        self.say(s);
        Ok(None)
    }

    /// `call()`.
    pub fn call(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let (name, param) = self.ops[i].code.syntax();
        if self.verbose {
            let line = format!("call {name} {off} {max} {}\n", len as i64);
            self.say(&line);
        }
        let o = &self.ops[i];
        if (param & P_NUM == 0) != (o.num == 0) {
            return self.fail("need .num= argument\n");
        }
        if (param & P_VAL == 0) != (o.val == 0) {
            return self.fail("need .param= argument\n");
        }
        if (param & P_STRING == 0) != o.string.is_none() {
            return self.fail("need .string= argument\n");
        }
        if (param & P_AGGREGATE == 0) != (o.aggregate == Agg::None) {
            return self.fail("need .aggregate= argument\n");
        }
        if o.num != 0 {
            if o.result.has_ptr() {
                return self.fail(&format!("{name} already has result\n"));
            }
            if o.num > MAX_SERIES {
                return Err(Halt::Fail(format!(
                    "a series of {} accesses (erase size / block size, or an AU count) is more than flashpath runs in one test ({MAX_SERIES})",
                    o.num
                )));
            }
            let data = vec![Res::Null; o.num as usize];
            let o = &mut self.ops[i];
            o.result = Res::Arr(Rc::new(RefCell::new(data)), R_NONE);
            o.r_type = R_ARRAY;
        }
        let next = self.dispatch(i, off, max, len)?;
        if next.is_none() {
            return self.fail(&format!("from {name}\n"));
        }
        Ok(next)
    }

    fn dispatch(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        use Code::*;
        match self.ops[i].code {
            End | OffPow2 | MaxPow2 | MaxLin => self.fail("command not implemented\n"),
            Read => self.access(i, off, len, None),
            WriteZero => self.access(i, off, len, Some(0x00)),
            WriteOne => self.access(i, off, len, Some(0xff)),
            WriteRand => self.access(i, off, len, Some(0x5a)),
            Erase => Err(Halt::Fail(
                "O_ERASE (BLKDISCARD) is not part of any flashbench test".into(),
            )),
            Length | Offset => {
                let o = &mut self.ops[i];
                o.result = Res::L(if o.code == Length { len as i64 } else { off });
                o.r_type = R_BYTE;
                Ok(Some(i + 1))
            }
            Print => {
                let s = self.ops[i].string.unwrap_or("");
                self.say(s);
                Ok(Some(i + 1))
            }
            Printf => self.print_val(i, off, max, len),
            Format => self.format(i, off, max, len),
            Newline => {
                self.say("\n");
                Ok(Some(i + 1))
            }
            Bps => self.bytespersec(i, off, max, len),
            Sequence => self.sequence(i, off, max, len),
            Repeat => {
                let mut next = Some(i + 1);
                for _ in 0..self.ops[i].num {
                    if next.is_none() {
                        break;
                    }
                    next = self.call_aggregate(i + 1, i, off, max, len)?;
                }
                Ok(next)
            }
            OffFixed => {
                let v = self.ops[i].val;
                self.call_propagate(i + 1, i, off.wrapping_add(v), max, len)
            }
            OffLin | OffRand => self.off_series(i, off, max, len),
            LenFixed => {
                let v = self.ops[i].val as u64;
                self.call_propagate(i + 1, i, off, max, v)
            }
            LenPow2 => self.len_pow2(i, off, max, len),
            Reduce => self.reduce(i, off, max, len),
            Drop => {
                let Some(next) = self.call(i + 1, off, max, len)? else {
                    return Ok(None);
                };
                self.clear(i + 1);
                Ok(Some(next))
            }
        }
    }

    fn clear(&mut self, i: usize) {
        let c = &mut self.ops[i];
        c.result = Res::Null;
        c.size_x = 0;
        c.size_y = 0;
        c.r_type = R_NONE;
    }

    /// `do_read`, `do_write_*`: one timed access.
    fn access(&mut self, i: usize, off: i64, len: u64, fill: Option<u8>) -> Next {
        let t = self.clock.timed(fill, off, len)?;
        let o = &mut self.ops[i];
        o.result = Res::L(t);
        o.r_type = R_NS;
        Ok(Some(i + 1))
    }

    /// `call_propagate()`: the child's result becomes this operation's.
    fn call_propagate(&mut self, child: usize, this: usize, off: i64, max: i64, len: u64) -> Next {
        let next = self.call(child, off, max, len)?;
        let c = self.ops[child].clone();
        let t = &mut self.ops[this];
        t.result = c.result;
        t.size_x = c.size_x;
        t.size_y = c.size_y;
        t.r_type = c.r_type;
        self.clear(child);
        Ok(next)
    }

    /// `call_aggregate()`: the child's result is appended to this operation's array.
    fn call_aggregate(&mut self, child: usize, this: usize, off: i64, max: i64, len: u64) -> Next {
        let res = self.ops[this].result.array();
        let mut ty = self.ops[this].result.rtype();
        let Some(next) = self.call(child, off, max, len)? else {
            return Ok(None);
        };
        let (size_x, num) = (self.ops[this].size_x, self.ops[this].num);
        if size_x >= num {
            return self.fail(&format!("array too small for {size_x} entries\n"));
        }
        let res = res.expect("a series operation has its array");
        let c = self.ops[child].clone();
        res.borrow_mut()[size_x as usize] = c.result.clone();
        if c.r_type == R_NONE {
            return Ok(Some(next));
        }
        self.ops[this].size_x += 1;
        if ty == R_NONE {
            ty = c.r_type;
            self.ops[this].result = Res::Arr(res.clone(), ty);
        }
        if ty != c.r_type {
            return self.fail(&format!(
                "cannot aggregate return type {ty} with {}\n",
                c.r_type
            ));
        }
        if c.r_type == R_ARRAY {
            let this_y = self.ops[this].size_y;
            if this_y != 0 && this_y != c.size_x {
                return self.fail(&format!(
                    "cannot aggregate different size arrays ({this_y}, {})\n",
                    c.size_x
                ));
            }
            if c.size_y != 0 {
                return self.fail("cannot aggregate three-dimensional array\n");
            }
            self.ops[this].size_y = c.size_x;
            self.ops[child].size_x = 0;
            self.ops[child].size_y = 0;
        }
        self.ops[child].r_type = R_NONE;
        self.ops[child].result = Res::Null;
        Ok(Some(next))
    }

    /// `format()`.
    fn format(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let next = self.call_propagate(i + 1, i, off, max, len)?;
        let o = &self.ops[i];
        let r = format_value(&o.result, o.r_type, o.size_x, o.size_y);
        let o = &mut self.ops[i];
        o.result = r;
        // (vm.c's check of the result against res_null compares two arrays' addresses,
        // which never match: it never fires.)
        if o.r_type != R_ARRAY {
            o.r_type = R_STRING;
        }
        Ok(next)
    }

    /// `print_val()`.
    fn print_val(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let Some(next) = self.call_propagate(i + 1, i, off, max, len)? else {
            return Ok(None);
        };
        let o = self.ops[i].clone();
        if !self.print_value(&o.result, o.r_type, o.size_x, o.size_y) {
            return self.fail(&format!("cannot print value of type {}\n", o.r_type));
        }
        Ok(Some(next))
    }

    /// `print_value()`: numbers as "%lld ", strings as "%s ", array elements each
    /// followed by a space (by a newline in a two-dimensional array).
    fn print_value(&mut self, val: &Res, ty: RType, size_x: u32, size_y: u32) -> bool {
        match ty {
            R_ARRAY => {
                let Some(arr) = val.array() else {
                    return size_x == 0;
                };
                for x in 0..size_x as usize {
                    let item = arr.borrow().get(x).cloned().unwrap_or(Res::Null);
                    if !self.print_value(&item, val.rtype(), size_y, 0) {
                        self.say(&format!("cannot print array of type {}\n", val.rtype()));
                        return false;
                    }
                    self.say(if size_y != 0 { "\n" } else { " " });
                }
                true
            }
            R_BYTE | R_NS | R_BPS => {
                self.say(&format!("{} ", val.l()));
                true
            }
            R_STRING => {
                let mut t = val.text();
                t.push(b' ');
                self.out.print(&t);
                true
            }
            _ => false,
        }
    }

    /// `bytespersec()`.
    fn bytespersec(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let next = self.call_propagate(i + 1, i, off, max, len)?;
        let o = &self.ops[i];
        let r = bytespersec_one(&o.result, len, o.r_type, o.size_x, o.size_y)?;
        let r_type = o.r_type;
        let zero = r.is_zero();
        self.ops[i].result = r;
        if zero {
            return self.fail(&format!("invalid data, type {r_type}\n"));
        }
        if r_type == R_NS {
            self.ops[i].r_type = R_BPS;
        }
        Ok(next)
    }

    /// `sequence()`.
    fn sequence(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let mut next = i + 1;
        for _ in 0..self.ops[i].num {
            match self.call_aggregate(next, i, off, max, len)? {
                Some(n) => next = n,
                None => return Ok(None),
            }
        }
        let o = &mut self.ops[i];
        if o.size_x == 1 {
            let ty = o.result.rtype();
            let first = o
                .result
                .array()
                .map(|a| a.borrow()[0].clone())
                .unwrap_or(Res::Null);
            o.r_type = ty;
            o.result = first;
            o.size_x = o.size_y;
            o.size_y = 0;
        }
        if self.ops.get(next).map(|o| o.code) != Some(Code::End) {
            return self.fail("sequence needs to end with END command\n");
        }
        Ok(Some(next + 1))
    }

    /// `len_pow2()`: lengths `len * val << i` for i = 0.., or for a negative `val`
    /// `len * (-val / 2) << i` for i = num down to 1.
    fn len_pow2(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let len = if len == 0 { 1 } else { len };
        let (num, val) = (self.ops[i].num, self.ops[i].val);
        let mut next = Some(i + 1);
        if val > 0 {
            for k in 0..num {
                if next.is_none() {
                    break;
                }
                let l = len.wrapping_mul(val as u64).wrapping_shl(k);
                next = self.call_aggregate(i + 1, i, off, max, l)?;
            }
        } else {
            for k in (1..=num).rev() {
                if next.is_none() {
                    break;
                }
                let l = len
                    .wrapping_mul((val.wrapping_neg() / 2) as u64)
                    .wrapping_shl(k);
                next = self.call_aggregate(i + 1, i, off, max, l)?;
            }
        }
        Ok(next)
    }

    /// `off_lin()` and `off_rand()`: `num` offsets `off + pos * val` (`unsigned int`
    /// product), `pos` in order or in vm.c's LFSR order; `val == -1` cuts `max` into
    /// `max / len` chunks.
    fn off_series(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let o = &self.ops[i];
        let random = o.code == Code::OffRand;
        let (num, val): (u32, u32) = if o.val == -1 {
            if len == 0 || max < len as i64 {
                return self.fail(&format!(
                    "cannot fill {max} bytes with {} byte chunks\n",
                    len as i64
                ));
            }
            let num = (max as u64 / len) as u32;
            (num, (max / num as i64) as u32)
        } else {
            (o.num, o.val as u32)
        };
        // vm.c steps its LFSR before each call; it can only fail (a width over 16 bits)
        // at the first step, before any access, so the order can be drawn up front.
        let order = if random {
            match off_rand_order(num) {
                Some(o) => Some(o),
                None => {
                    self.out.eprint(b"lfsr: internal error\n");
                    return Err(Halt::Exit(255));
                }
            }
        } else {
            None
        };
        let mut next = Some(i + 1);
        for k in 0..num {
            if next.is_none() {
                break;
            }
            let pos = order.as_ref().map_or(k, |o| o[k as usize]);
            let at = off.wrapping_add(pos.wrapping_mul(val) as i64);
            next = self.call_aggregate(i + 1, i, at, max, len)?;
        }
        Ok(next)
    }

    /// `reduce()`.
    fn reduce(&mut self, i: usize, off: i64, max: i64, len: u64) -> Next {
        let child = i + 1;
        let Some(next) = self.call(child, off, max, len)? else {
            return Ok(None);
        };
        let c = self.ops[child].clone();
        if c.r_type != R_ARRAY || c.size_x == 0 {
            return self.fail(&format!(
                "cannot reduce scalar further, type {}, size {}\n",
                c.r_type, c.size_y
            ));
        }
        if c.size_y > self.ops[i].num {
            return self.fail("target array too short\n");
        }
        // (A REDUCE has no .num, so a two-dimensional child has already failed the
        // check above: vm.c's two-dimensional branch cannot run.)
        let ety = c.result.rtype();
        if ety != R_NS && ety != R_BPS {
            return self.fail(&format!("cannot reduce type {ety}\n"));
        }
        let arr = c.result.array().expect("an R_ARRAY result has its array");
        let values: Vec<i64> = arr.borrow()[..c.size_x as usize]
            .iter()
            .map(Res::l)
            .collect();
        let r = do_reduce_int(&values, self.ops[i].aggregate);
        let o = &mut self.ops[i];
        o.result = Res::L(r);
        o.size_x = 0;
        o.size_y = 0;
        o.r_type = ety;
        self.clear(child);
        Ok(Some(next))
    }
}

/// `do_reduce_int()`. MINIMUM and MAXIMUM take 0 as "nothing yet".
pub fn do_reduce_int(input: &[i64], a: Agg) -> i64 {
    let mut r: i64 = 0;
    for &x in input {
        match a {
            Agg::Minimum => {
                if r == 0 || r > x {
                    r = x;
                }
            }
            Agg::Maximum => {
                if r == 0 || r < x {
                    r = x;
                }
            }
            Agg::Average | Agg::Total => r = r.wrapping_add(x),
            Agg::None => {}
        }
    }
    if a == Agg::Average {
        r = r.wrapping_div(input.len() as i64);
    }
    r
}

/// A 7-byte field, space-padded, NUL-terminated.
fn field(text: &str) -> Res {
    let mut s = [b' '; 8];
    let t = cut7(text);
    s[..t.len()].copy_from_slice(&t);
    s[7] = 0;
    Res::S(s)
}

/// vm.c's R_BYTE text: `%lldB`, `%.3gKiB`, `%.3gMiB`, `%.4gGiB` (binary units).
pub fn format_bytes(l: i64) -> Res {
    field(&scaled(l, 1024.0, ["B", "KiB", "MiB", "GiB"]))
}

/// vm.c's R_BPS text: `%lldB/s`, `%.3gK/s`, `%.3gM/s`, `%.4gG/s` (decimal units).
pub fn format_bps(l: i64) -> Res {
    field(&scaled(l, 1000.0, ["B/s", "K/s", "M/s", "G/s"]))
}

/// vm.c's unit ladder: the integer below `step`, then `%.3g` of step and step², then
/// `%.4g` of step³, each with its unit.
fn scaled(l: i64, step: f64, units: [&str; 4]) -> String {
    let v = l as f64;
    if v < step {
        format!("{l}{}", units[0])
    } else if v < step * step {
        format!("{}{}", g(v / step, 3), units[1])
    } else if v < step * step * step {
        format!("{}{}", g(v / (step * step), 3), units[2])
    } else {
        format!("{}{}", g(v / (step * step * step), 4), units[3])
    }
}

/// vm.c's R_NS text (flashbench.c's `format_ns`, padded).
pub fn format_ns_field(l: i64) -> Res {
    field(&super::bench::format_ns_text(l))
}

/// `format_value()`.
fn format_value(val: &Res, ty: RType, size_x: u32, size_y: u32) -> Res {
    match ty {
        R_ARRAY => {
            let Some(arr) = val.array() else {
                return val.clone();
            };
            let ety = val.rtype();
            for x in 0..size_x as usize {
                let item = arr.borrow()[x].clone();
                let f = format_value(&item, ety, size_y, 0);
                arr.borrow_mut()[x] = f;
            }
            if ety == R_ARRAY {
                val.clone()
            } else {
                Res::Arr(arr, R_STRING)
            }
        }
        R_BYTE => format_bytes(val.l()),
        R_BPS => format_bps(val.l()),
        R_NS => format_ns_field(val.l()),
        _ => Res::Null,
    }
}

/// `bytespersec_one()`: `1000000000ll * bytes / ns`, which C computes in `unsigned long`
/// (`bytes` is a `size_t`), so a negative time (flashbench's -ENOMEM) gives 0.
fn bytespersec_one(
    res: &Res,
    bytes: u64,
    ty: RType,
    size_x: u32,
    size_y: u32,
) -> Result<Res, Halt> {
    match ty {
        R_NS => {
            let t = res.l() as u64;
            if t == 0 {
                return Err(Halt::Fail(
                    "an access took 0 ns: flashbench would divide by zero (SIGFPE)".into(),
                ));
            }
            Ok(Res::L((1_000_000_000u64.wrapping_mul(bytes) / t) as i64))
        }
        R_ARRAY => {
            let Some(arr) = res.array() else {
                return Ok(res.clone());
            };
            let ety = res.rtype();
            for x in 0..size_x as usize {
                let item = arr.borrow()[x].clone();
                let b = bytespersec_one(&item, bytes, ety, size_y, 0)?;
                arr.borrow_mut()[x] = b;
            }
            Ok(if ety == R_NS {
                Res::Arr(arr, R_BPS)
            } else {
                res.clone()
            })
        }
        _ => Ok(Res::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: Res) -> String {
        match r {
            Res::S(s) => String::from_utf8(s[..7].to_vec()).unwrap(),
            other => panic!("not a string: {other:?}"),
        }
    }

    /// The README's -O table, and the edges of each unit, worked from vm.c's formats.
    #[test]
    fn fields_are_seven_bytes() {
        assert_eq!(text(format_bytes(4 << 20)), "4MiB   ");
        assert_eq!(text(format_bytes(256 << 10)), "256KiB ");
        assert_eq!(text(format_bytes(512)), "512B   ");
        assert_eq!(text(format_bytes(1 << 30)), "1GiB   ");
        assert_eq!(text(format_bytes(1536)), "1.5KiB ");
        assert_eq!(text(format_bps(8_790_000)), "8.79M/s");
        assert_eq!(text(format_bps(912_000)), "912K/s ");
        assert_eq!(text(format_bps(999)), "999B/s ");
        assert_eq!(text(format_bps(1_234_567_890)), "1.235G/");
        assert_eq!(text(format_bps(-3)), "-3B/s  ");
        assert_eq!(text(format_ns_field(1_080_000)), "1.08ms ");
        // "µ" takes two of the seven bytes.
        match format_ns_field(741_000) {
            Res::S(s) => assert_eq!(&s[..7], "741µs ".as_bytes()),
            _ => unreachable!(),
        }
    }

    #[test]
    fn reductions_are_vm_cs() {
        assert_eq!(do_reduce_int(&[5, 3, 9], Agg::Minimum), 3);
        assert_eq!(do_reduce_int(&[5, 3, 9], Agg::Maximum), 9);
        assert_eq!(do_reduce_int(&[5, 3, 9], Agg::Average), 5);
        assert_eq!(do_reduce_int(&[5, 4], Agg::Average), 4);
        assert_eq!(do_reduce_int(&[-7, 0], Agg::Average), -3);
        // 0 is "nothing yet" to MINIMUM: a later value replaces it.
        assert_eq!(do_reduce_int(&[0, 4], Agg::Minimum), 4);
    }

    #[test]
    fn find_order_counts_the_lengths() {
        assert_eq!(find_order(4 << 20, 16 << 10), 9);
        assert_eq!(find_order(4 << 20, 4 << 20), 1);
        assert_eq!(find_order(4 << 20, 8 << 20), 1);
        assert_eq!(find_order(3 << 20, 1 << 20), 3);
    }
}
