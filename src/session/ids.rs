//! Session ids (UUID version 7) and entry ids (8 hex characters, unique within a file).
//!
//! UUIDv7 puts the creation time in milliseconds in its first 48 bits, so ids sort by creation
//! time, followed by the version nibble `7`, 12 random bits, the RFC 4122 variant and 62 more
//! random bits. Randomness comes from the standard library's per-process random hash keys
//! (`RandomState`, seeded by the OS) mixed with a counter and the clock: unpredictable enough
//! for identifiers, and no extra dependency. Ids are not secrets.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::agent::protocol::types::now_ms;

/// 64 random bits.
pub fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}

/// A UUID version 7 for the current time, e.g. `01a2361b-5150-7635-b3fd-ab0404bb9f84`.
pub(crate) fn uuid_v7() -> String {
    uuid_v7_at(now_ms())
}

/// A UUID version 7 whose timestamp is `ms` (epoch milliseconds).
pub fn uuid_v7_at(ms: i64) -> String {
    let ts = (ms.max(0) as u64) & 0xffff_ffff_ffff;
    let (r1, r2) = (random_u64(), random_u64());
    let rand_a = r1 & 0x0fff;
    let rand_b = r2 & 0x3fff_ffff_ffff_ffff;
    let hi = (ts << 16) | 0x7000 | rand_a;
    let lo = 0x8000_0000_0000_0000 | rand_b;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// True for text shaped like a UUID (8-4-4-4-12 hex digits).
pub(crate) fn looks_like_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A fresh 8-hex entry id not in `taken`.
pub(crate) fn entry_id(taken: &HashSet<String>) -> String {
    loop {
        let id = format!("{:08x}", random_u64() as u32);
        if !taken.contains(&id) {
            return id;
        }
    }
}

/// Entry ids in use, stored compactly: 8-hex ids as numbers, anything else as text.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdSet {
    hex: HashSet<u32, foldhash::fast::RandomState>,
    other: HashSet<String, foldhash::fast::RandomState>,
}

fn hex_id(id: &str) -> Option<u32> {
    (id.len() == 8
        && id
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)))
    .then(|| u32::from_str_radix(id, 16).ok())
    .flatten()
}

impl IdSet {
    pub(crate) fn contains(&self, id: &str) -> bool {
        match hex_id(id) {
            Some(n) => self.hex.contains(&n),
            None => self.other.contains(id),
        }
    }

    pub(crate) fn insert(&mut self, id: &str) {
        match hex_id(id) {
            Some(n) => {
                self.hex.insert(n);
            }
            None => {
                self.other.insert(id.to_string());
            }
        }
    }

    /// A new 8-hex id not in the set (not inserted).
    pub(crate) fn fresh(&self) -> String {
        loop {
            let n = random_u64() as u32;
            if !self.hex.contains(&n) {
                return format!("{n:08x}");
            }
        }
    }
}

impl<'a> FromIterator<&'a str> for IdSet {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut set = IdSet::default();
        let iter = iter.into_iter();
        // A resumed session's ids, 20,000 of them for a long one: sized once.
        set.hex.reserve(iter.size_hint().0);
        for id in iter {
            set.insert(id);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_v7_layout_and_time_order() {
        let a = uuid_v7_at(1_796_204_089_681);
        assert!(looks_like_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(&a[..13], "01a2361b-5151");
        let b = uuid_v7_at(1_796_204_089_682);
        assert!(a < b);
        assert_ne!(uuid_v7(), uuid_v7());
    }

    #[test]
    fn id_sets_hold_hex_and_other_ids() {
        let mut set: IdSet = ["0000000a", "ffffffff", "not-hex!", "ABCDEF12"]
            .into_iter()
            .collect();
        assert!(set.contains("0000000a") && set.contains("not-hex!") && set.contains("ABCDEF12"));
        assert!(!set.contains("abcdef12"));
        let id = set.fresh();
        assert!(!set.contains(&id));
        set.insert(&id);
        assert!(set.contains(&id));
    }

    #[test]
    fn entry_ids_are_unique_hex() {
        let mut taken = HashSet::new();
        for _ in 0..2000 {
            let id = entry_id(&taken);
            assert_eq!(id.len(), 8);
            assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
            assert!(taken.insert(id));
        }
    }
}
