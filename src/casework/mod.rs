//! Running rules against their own test cases: each rule's `tests`
//! ([`rule_cases`]), SQL rules' event sequences ([`session_cases`]) and an
//! ATR corpus's cases ([`atr_cases`]; its correlation rules replay sessions,
//! [`atr_trace_cases`]).

pub mod atr_cases;
pub mod atr_trace_cases;
pub mod rule_cases;
pub mod session_cases;
