//! Erlang terms and how Rust values map to them.
//!
//! A message to or from Erlang is a [`Term`] (the raw, untyped form, from the `eetf` crate).
//! Typed actors use Rust types that convert both ways through [`IntoTerm`] and [`FromTerm`]:
//!
//! ```
//! use pcml_dist::term::{Atom, FromTerm, IntoTerm, Term, format};
//!
//! let t: Term = (Atom::from("add"), 2u8, vec![1.5f64]).into_term();
//! assert_eq!(format(&t), "{add,2,[1.5]}");
//! let (op, n, xs) = <(Atom, u8, Vec<f64>)>::from_term(t).unwrap();
//! assert_eq!((op.name.as_str(), n, xs), ("add", 2, vec![1.5]));
//! ```
//!
//! # The mapping
//! | Rust | Erlang |
//! |---|---|
//! | [`Term`] | any term, as is |
//! | [`Atom`] | atom |
//! | `bool` | `true` / `false` |
//! | `i8` .. `i64`, `u8` .. `u64`, `isize`, `usize` | integer (out of range: an error) |
//! | `f64`, `f32` | float |
//! | `String`, `&str` (into only) | UTF-8 binary; from a binary or a list of characters |
//! | [`Binary`] | binary (raw bytes) |
//! | `Vec<T>` | list (from a list, or a string of small integers) |
//! | tuples `(A,)` to `(A, B, C, D, E, F, G, H)`, `()` | tuples of that size, `{}` |
//! | `Option<T>` | `undefined` or the term of `T` |
//! | `Result<T, E>` | `{ok, T}` or `{error, E}` |
//! | `HashMap<K, V>`, `BTreeMap<K, V>` | map |
//! | [`ErlPid`] | pid ([`Node::pid_of`](crate::Node::pid_of) makes it a pcml `Pid`) |
//! | [`Reference`] | reference |
//!
//! For your own types, implement the two traits (a struct usually maps to a tagged tuple,
//! an enum to an atom or a tuple whose first element is an atom, as Erlang records and
//! tagged messages do).
//!
//! Exit reasons map as follows ([`reason_to_term`], [`reason_from_term`]): `normal` is
//! [`ExitReason::Normal`], `noproc` is [`ExitReason::NoActor`], and any other Erlang reason
//! arrives as [`ExitReason::Killed`] holding the term as Erlang prints it (`noconnection`,
//! `{shutdown,closed}`); the other way, `Killed(text)` leaves as the atom `text`, a panic as
//! `{panic, <<"message">>}`, [`ExitReason::Exited`] as `exited`, and
//! [`ExitReason::Linked`] as the reason of the actor it came from (Erlang passes reasons
//! along links unchanged).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use pcml::actor::ExitReason;

pub use eetf::{
    Atom, BigInteger, Binary, ByteList, FixInteger, Float, List, Map, Pid as ErlPid, Reference,
    Term, Tuple,
};

/// A term that does not have the shape the Rust type wants.
///
/// ```
/// use pcml_dist::term::{FromTerm, IntoTerm};
///
/// let err = u8::from_term(300u32.into_term()).unwrap_err();
/// assert_eq!(err.to_string(), "expected an integer in 0..=255, got 300");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermError {
    /// What the type wanted.
    pub expected: String,
    /// The term it got, as Erlang prints it (cut at 200 characters).
    pub got: String,
}

impl TermError {
    /// An error saying `expected` was wanted where `got` came.
    ///
    /// ```
    /// use pcml_dist::term::{Atom, Term, TermError};
    ///
    /// let e = TermError::new("a point", &Term::from(Atom::from("x")));
    /// assert_eq!(e.to_string(), "expected a point, got x");
    /// ```
    pub fn new(expected: impl Into<String>, got: &Term) -> Self {
        let mut got = format(got);
        if got.len() > 200 {
            let mut cut = 200;
            while !got.is_char_boundary(cut) {
                cut -= 1;
            }
            got.truncate(cut);
            got.push_str("...");
        }
        TermError {
            expected: expected.into(),
            got,
        }
    }
}

impl fmt::Display for TermError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}, got {}", self.expected, self.got)
    }
}

impl std::error::Error for TermError {}

/// A Rust value that becomes an Erlang term (see the [module docs](self) for the mapping).
///
/// ```
/// use pcml_dist::term::{IntoTerm, format};
///
/// assert_eq!(format(&Some("hi").into_term()), "<<\"hi\">>");
/// assert_eq!(format(&None::<u8>.into_term()), "undefined");
/// ```
pub trait IntoTerm {
    /// The term.
    ///
    /// ```
    /// use pcml_dist::term::{IntoTerm, format};
    ///
    /// assert_eq!(format(&(1u8, "a", vec![2i64, 3]).into_term()), "{1,<<\"a\">>,[2,3]}");
    /// ```
    fn into_term(self) -> Term;
}

/// A Rust value made from an Erlang term (see the [module docs](self) for the mapping).
///
/// ```
/// use pcml_dist::term::{FromTerm, IntoTerm, format};
///
/// let t = Ok::<u32, String>(7).into_term();
/// assert_eq!(format(&t), "{ok,7}");
/// assert_eq!(Result::<u32, String>::from_term(t), Ok(Ok(7)));
/// ```
pub trait FromTerm: Sized {
    /// The value, or why the term does not fit.
    ///
    /// ```
    /// use pcml_dist::term::{FromTerm, atom};
    ///
    /// assert_eq!(bool::from_term(atom("true")), Ok(true));
    /// assert!(u8::from_term(atom("true")).is_err());
    /// ```
    fn from_term(t: Term) -> Result<Self, TermError>;
}

/// The atom `name` as a term.
///
/// ```
/// use pcml_dist::term::{atom, format};
///
/// assert_eq!(format(&atom("ok")), "ok");
/// ```
pub fn atom(name: &str) -> Term {
    Term::Atom(Atom::from(name))
}

/// A tuple term of `elements`.
///
/// ```
/// use pcml_dist::term::{atom, format, tuple};
///
/// assert_eq!(format(&tuple(vec![atom("a"), atom("b")])), "{a,b}");
/// ```
pub fn tuple(elements: Vec<Term>) -> Term {
    Term::Tuple(Tuple { elements })
}

/// Whether `t` is the atom `name`.
///
/// ```
/// use pcml_dist::term::{atom, is_atom};
///
/// assert!(is_atom(&atom("stop"), "stop"));
/// assert!(!is_atom(&atom("go"), "stop"));
/// ```
pub fn is_atom(t: &Term, name: &str) -> bool {
    matches!(t, Term::Atom(a) if a.name == name)
}

impl IntoTerm for Term {
    fn into_term(self) -> Term {
        self
    }
}

impl FromTerm for Term {
    fn from_term(t: Term) -> Result<Self, TermError> {
        Ok(t)
    }
}

macro_rules! wrapped {
    ($ty:ty, $variant:ident, $what:expr) => {
        impl IntoTerm for $ty {
            fn into_term(self) -> Term {
                Term::$variant(self)
            }
        }
        impl FromTerm for $ty {
            fn from_term(t: Term) -> Result<Self, TermError> {
                match t {
                    Term::$variant(x) => Ok(x),
                    other => Err(TermError::new($what, &other)),
                }
            }
        }
    };
}

wrapped!(Atom, Atom, "an atom");
wrapped!(ErlPid, Pid, "a pid");
wrapped!(Binary, Binary, "a binary");

impl IntoTerm for Reference {
    fn into_term(self) -> Term {
        Term::Reference(Box::new(self))
    }
}

impl FromTerm for Reference {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match t {
            Term::Reference(r) => Ok(*r),
            other => Err(TermError::new("a reference", &other)),
        }
    }
}

impl IntoTerm for bool {
    fn into_term(self) -> Term {
        atom(if self { "true" } else { "false" })
    }
}

impl FromTerm for bool {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match &t {
            Term::Atom(a) if a.name == "true" => Ok(true),
            Term::Atom(a) if a.name == "false" => Ok(false),
            _ => Err(TermError::new("true or false", &t)),
        }
    }
}

/// An integer term of any size.
fn int_term(v: i128) -> Term {
    match i32::try_from(v) {
        Ok(v) => Term::FixInteger(FixInteger { value: v }),
        Err(_) => Term::BigInteger(BigInteger {
            value: num_bigint::BigInt::from(v),
        }),
    }
}

/// The integer value of `t`, if it is an integer that fits an `i128`.
fn int_of(t: &Term) -> Option<i128> {
    match t {
        Term::FixInteger(i) => Some(i128::from(i.value)),
        Term::BigInteger(b) => i128::try_from(&b.value).ok(),
        _ => None,
    }
}

macro_rules! ints {
    ($($ty:ty),*) => {$(
        impl IntoTerm for $ty {
            fn into_term(self) -> Term {
                int_term(self as i128)
            }
        }
        impl FromTerm for $ty {
            fn from_term(t: Term) -> Result<Self, TermError> {
                int_of(&t)
                    .and_then(|v| <$ty>::try_from(v).ok())
                    .ok_or_else(|| {
                        TermError::new(
                            format!("an integer in {}..={}", <$ty>::MIN, <$ty>::MAX),
                            &t,
                        )
                    })
            }
        }
    )*};
}

ints!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl IntoTerm for f64 {
    fn into_term(self) -> Term {
        Term::Float(Float { value: self })
    }
}

impl FromTerm for f64 {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match t {
            Term::Float(f) => Ok(f.value),
            other => Err(TermError::new("a float", &other)),
        }
    }
}

impl IntoTerm for f32 {
    fn into_term(self) -> Term {
        f64::from(self).into_term()
    }
}

impl FromTerm for f32 {
    fn from_term(t: Term) -> Result<Self, TermError> {
        f64::from_term(t).map(|v| v as f32)
    }
}

impl IntoTerm for String {
    fn into_term(self) -> Term {
        Term::Binary(Binary {
            bytes: self.into_bytes(),
        })
    }
}

impl IntoTerm for &str {
    fn into_term(self) -> Term {
        Term::Binary(Binary::from(self.as_bytes()))
    }
}

impl IntoTerm for Arc<str> {
    fn into_term(self) -> Term {
        (&*self).into_term()
    }
}

impl FromTerm for String {
    fn from_term(t: Term) -> Result<Self, TermError> {
        const WHAT: &str = "a UTF-8 binary or a list of characters";
        match t {
            Term::Binary(b) => String::from_utf8(b.bytes)
                .map_err(|e| TermError::new(WHAT, &Term::from(Binary::from(e.as_bytes())))),
            Term::ByteList(l) => Ok(l.bytes.iter().map(|&b| char::from(b)).collect()),
            Term::List(l) => {
                let mut s = String::with_capacity(l.elements.len());
                for e in &l.elements {
                    match int_of(e)
                        .and_then(|v| u32::try_from(v).ok())
                        .and_then(char::from_u32)
                    {
                        Some(c) => s.push(c),
                        None => return Err(TermError::new(WHAT, &Term::List(l))),
                    }
                }
                Ok(s)
            }
            other => Err(TermError::new(WHAT, &other)),
        }
    }
}

impl<T: IntoTerm> IntoTerm for Vec<T> {
    fn into_term(self) -> Term {
        Term::List(List {
            elements: self.into_iter().map(IntoTerm::into_term).collect(),
        })
    }
}

impl<T: FromTerm> FromTerm for Vec<T> {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match t {
            Term::List(l) => l.elements.into_iter().map(T::from_term).collect(),
            Term::ByteList(l) => l
                .bytes
                .into_iter()
                .map(|b| T::from_term(Term::FixInteger(FixInteger::from(i32::from(b)))))
                .collect(),
            other => Err(TermError::new("a list", &other)),
        }
    }
}

impl<T: IntoTerm> IntoTerm for Box<T> {
    fn into_term(self) -> Term {
        (*self).into_term()
    }
}

impl<T: FromTerm> FromTerm for Box<T> {
    fn from_term(t: Term) -> Result<Self, TermError> {
        T::from_term(t).map(Box::new)
    }
}

impl<T: IntoTerm> IntoTerm for Option<T> {
    fn into_term(self) -> Term {
        match self {
            Some(v) => v.into_term(),
            None => atom("undefined"),
        }
    }
}

impl<T: FromTerm> FromTerm for Option<T> {
    fn from_term(t: Term) -> Result<Self, TermError> {
        if is_atom(&t, "undefined") {
            Ok(None)
        } else {
            T::from_term(t).map(Some)
        }
    }
}

impl<T: IntoTerm, E: IntoTerm> IntoTerm for Result<T, E> {
    fn into_term(self) -> Term {
        match self {
            Ok(v) => tuple(vec![atom("ok"), v.into_term()]),
            Err(e) => tuple(vec![atom("error"), e.into_term()]),
        }
    }
}

impl<T: FromTerm, E: FromTerm> FromTerm for Result<T, E> {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match t {
            Term::Tuple(mut tu) if tu.elements.len() == 2 => {
                let v = tu.elements.pop().expect("two elements");
                let tag = tu.elements.pop().expect("two elements");
                if is_atom(&tag, "ok") {
                    T::from_term(v).map(Ok)
                } else if is_atom(&tag, "error") {
                    E::from_term(v).map(Err)
                } else {
                    Err(TermError::new(
                        "{ok, _} or {error, _}",
                        &tuple(vec![tag, v]),
                    ))
                }
            }
            other => Err(TermError::new("{ok, _} or {error, _}", &other)),
        }
    }
}

macro_rules! maps {
    ($($map:ident: $($bound:path),*;)*) => {$(
        impl<K: IntoTerm, V: IntoTerm> IntoTerm for $map<K, V> {
            fn into_term(self) -> Term {
                Term::Map(Map {
                    map: self
                        .into_iter()
                        .map(|(k, v)| (k.into_term(), v.into_term()))
                        .collect(),
                })
            }
        }
        impl<K: FromTerm $(+ $bound)*, V: FromTerm> FromTerm for $map<K, V> {
            fn from_term(t: Term) -> Result<Self, TermError> {
                match t {
                    Term::Map(m) => m
                        .map
                        .into_iter()
                        .map(|(k, v)| Ok((K::from_term(k)?, V::from_term(v)?)))
                        .collect(),
                    other => Err(TermError::new("a map", &other)),
                }
            }
        }
    )*};
}

maps! {
    HashMap: Eq, Hash;
    BTreeMap: Ord;
}

impl IntoTerm for () {
    fn into_term(self) -> Term {
        tuple(Vec::new())
    }
}

impl FromTerm for () {
    fn from_term(t: Term) -> Result<Self, TermError> {
        match &t {
            Term::Tuple(tu) if tu.elements.is_empty() => Ok(()),
            _ => Err(TermError::new("{}", &t)),
        }
    }
}

macro_rules! tuples {
    ($($n:expr => ($($t:ident),+);)*) => {$(
        impl<$($t: IntoTerm),+> IntoTerm for ($($t,)+) {
            #[allow(non_snake_case)]
            fn into_term(self) -> Term {
                let ($($t,)+) = self;
                tuple(vec![$($t.into_term()),+])
            }
        }
        impl<$($t: FromTerm),+> FromTerm for ($($t,)+) {
            fn from_term(t: Term) -> Result<Self, TermError> {
                match t {
                    Term::Tuple(tu) if tu.elements.len() == $n => {
                        let mut it = tu.elements.into_iter();
                        Ok(($($t::from_term(it.next().expect("arity checked"))?,)+))
                    }
                    other => Err(TermError::new(concat!("a tuple of ", $n, " elements"), &other)),
                }
            }
        }
    )*};
}

tuples! {
    1 => (A);
    2 => (A, B);
    3 => (A, B, C);
    4 => (A, B, C, D);
    5 => (A, B, C, D, E);
    6 => (A, B, C, D, E, F);
    7 => (A, B, C, D, E, F, G);
    8 => (A, B, C, D, E, F, G, H);
}

/// An actor's exit reason as an Erlang term (see the [module docs](self)).
///
/// ```
/// use pcml::actor::ExitReason;
/// use pcml_dist::term::{format, reason_to_term};
///
/// assert_eq!(format(&reason_to_term(&ExitReason::Normal)), "normal");
/// assert_eq!(format(&reason_to_term(&ExitReason::NoActor)), "noproc");
/// assert_eq!(format(&reason_to_term(&ExitReason::Killed("shutdown".into()))), "shutdown");
/// ```
pub fn reason_to_term(r: &ExitReason) -> Term {
    match r {
        ExitReason::Normal => atom("normal"),
        ExitReason::NoActor => atom("noproc"),
        ExitReason::Exited => atom("exited"),
        ExitReason::Killed(why) => atom(why),
        ExitReason::Panic(msg) => tuple(vec![atom("panic"), (&**msg).into_term()]),
        ExitReason::Linked { reason, .. } => reason_to_term(reason),
    }
}

/// An Erlang exit reason as an actor's (see the [module docs](self)).
///
/// ```
/// use pcml::actor::ExitReason;
/// use pcml_dist::term::{atom, reason_from_term, tuple};
///
/// assert_eq!(reason_from_term(&atom("normal")), ExitReason::Normal);
/// assert_eq!(reason_from_term(&atom("noproc")), ExitReason::NoActor);
/// assert_eq!(
///     reason_from_term(&tuple(vec![atom("shutdown"), atom("closed")])),
///     ExitReason::Killed("{shutdown,closed}".into())
/// );
/// ```
pub fn reason_from_term(t: &Term) -> ExitReason {
    match t {
        Term::Atom(a) if a.name == "normal" => ExitReason::Normal,
        Term::Atom(a) if a.name == "noproc" => ExitReason::NoActor,
        Term::Atom(a) => ExitReason::Killed(Arc::from(a.name.as_str())),
        other => ExitReason::Killed(Arc::from(format(other))),
    }
}

/// A term as Erlang's `io:format("~w")` writes it, except that binaries of printable text
/// are written as `<<"text">>` (as `~p` does).
///
/// ```
/// use pcml_dist::term::{IntoTerm, atom, format, tuple};
///
/// let t = tuple(vec![atom("shutdown"), atom("Weird name"), "ok".into_term(), 7u8.into_term()]);
/// assert_eq!(format(&t), "{shutdown,'Weird name',<<\"ok\">>,7}");
/// ```
pub fn format(t: &Term) -> String {
    let mut out = String::new();
    write_term(t, &mut out);
    out
}

fn write_atom(name: &str, out: &mut String) {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@');
    let reserved = matches!(
        name,
        "after"
            | "and"
            | "andalso"
            | "band"
            | "begin"
            | "bnot"
            | "bor"
            | "bsl"
            | "bsr"
            | "bxor"
            | "case"
            | "catch"
            | "cond"
            | "div"
            | "end"
            | "fun"
            | "if"
            | "let"
            | "not"
            | "of"
            | "or"
            | "orelse"
            | "receive"
            | "rem"
            | "try"
            | "when"
            | "xor"
            | "maybe"
            | "else"
    );
    if plain && !reserved {
        out.push_str(name);
    } else {
        out.push('\'');
        for c in name.chars() {
            match c {
                '\'' => out.push_str("\\'"),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('\'');
    }
}

fn write_seq<'a>(items: impl IntoIterator<Item = &'a Term>, out: &mut String) {
    for (i, t) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_term(t, out);
    }
}

fn write_bytes(b: &[u8], out: &mut String) {
    use std::fmt::Write;
    out.push_str("<<");
    match std::str::from_utf8(b) {
        Ok(s) if !s.is_empty() && s.chars().all(|c| !c.is_control() && c != '"' && c != '\\') => {
            let _ = write!(out, "\"{s}\"");
        }
        _ => {
            for (i, x) in b.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{x}");
            }
        }
    }
    out.push_str(">>");
}

fn write_term(t: &Term, out: &mut String) {
    use std::fmt::Write;
    match t {
        Term::Atom(a) => write_atom(&a.name, out),
        Term::FixInteger(i) => {
            let _ = write!(out, "{}", i.value);
        }
        Term::BigInteger(b) => {
            let _ = write!(out, "{}", b.value);
        }
        Term::Float(f) => {
            let _ = write!(out, "{:?}", f.value);
        }
        Term::Binary(b) => write_bytes(&b.bytes, out),
        Term::ByteList(l) => {
            out.push('[');
            for (i, x) in l.bytes.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{x}");
            }
            out.push(']');
        }
        Term::List(l) => {
            out.push('[');
            write_seq(&l.elements, out);
            out.push(']');
        }
        Term::ImproperList(l) => {
            out.push('[');
            write_seq(&l.elements, out);
            out.push('|');
            write_term(&l.last, out);
            out.push(']');
        }
        Term::Tuple(tu) => {
            out.push('{');
            write_seq(&tu.elements, out);
            out.push('}');
        }
        Term::Map(m) => {
            out.push_str("#{");
            for (i, (k, v)) in m.map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_term(k, out);
                out.push_str(" => ");
                write_term(v, out);
            }
            out.push('}');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}
