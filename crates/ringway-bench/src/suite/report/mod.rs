//! What a run tells its reader: the headline ([`headline`]), the terminal tables
//! ([`terminal`]), the HTML report ([`html`]) with its charts ([`charts`]), and the
//! change against an earlier run ([`compare`]); every verdict from paired rounds
//! ([`verdict`]).

pub mod charts;
pub mod compare;
pub mod headline;
pub mod html;
pub mod terminal;
pub mod verdict;
