//! Session ids short enough to type: the one place that decides how much of an id a list shows
//! and whether typed text names a session.
//!
//! Session ids are UUIDv7, whose first 8 hex digits change only every ~65 seconds, so ids made
//! in the same minute share them. A list therefore shows, for each id, the shortest start of it
//! (at least [`MIN_SHOWN`] characters) that no other id of the same list begins with
//! ([`unique_prefixes`]); a cut never ends on a `-`. Typed text matches an id when it is the
//! start of the id with dashes and case ignored ([`id_starts_with`]), so `01a23c61-51` and
//! `01a23c6151` name the same sessions.

/// The fewest characters of an id a list shows.
pub(crate) const MIN_SHOWN: usize = 8;

/// The id with dashes left out and letters in lower case: what matching compares.
fn folded(id: &str) -> String {
    id.chars()
        .filter(|c| *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when `query` is the start of `id`, ignoring dashes and case. An empty query (or one of
/// only dashes) matches nothing.
pub(crate) fn id_starts_with(id: &str, query: &str) -> bool {
    let query = folded(query);
    !query.is_empty() && folded(id).starts_with(&query)
}

/// Characters two lower-cased ids share at their start.
fn shared_start(a: &[char], b: &[char]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// For each of `ids` (in the same order), the shortest start of it, at least [`MIN_SHOWN`]
/// characters, that no other id of the list starts with; the whole id when that cannot be
/// (the same id twice, or one id the start of another). A cut that would end on `-` takes one
/// more character.
pub fn unique_prefixes(ids: &[&str]) -> Vec<String> {
    let lowered: Vec<Vec<char>> = ids
        .iter()
        .map(|id| id.chars().flat_map(char::to_lowercase).collect())
        .collect();
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| lowered[a].cmp(&lowered[b]));
    // In sorted order an id shares the most with its neighbours.
    let mut needed = vec![0usize; ids.len()];
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let shared = shared_start(&lowered[a], &lowered[b]);
        needed[a] = needed[a].max(shared + 1);
        needed[b] = needed[b].max(shared + 1);
    }
    ids.iter()
        .zip(needed)
        .map(|(id, needed)| {
            let chars: Vec<char> = id.chars().collect();
            let mut len = needed.max(MIN_SHOWN).min(chars.len());
            if len < chars.len() && chars[len - 1] == '-' {
                len += 1;
            }
            chars[..len].iter().collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_different_minutes_show_eight_characters() {
        let ids = [
            "01a23c61-5150-7635-b3fd-ab0404bb9f84",
            "01a23c70-0000-7000-8000-000000000000",
        ];
        assert_eq!(unique_prefixes(&ids), ["01a23c61", "01a23c70"]);
    }

    #[test]
    fn ids_of_the_same_minute_show_as_much_as_tells_them_apart() {
        let ids = [
            "01a23c61-5150-7635-b3fd-ab0404bb9f84",
            "01a23c61-5162-7000-8000-000000000000",
            "01a23c61-9aaa-7000-8000-000000000000",
        ];
        // Never cut on the dash: the ninth character is one, so the tenth comes with it.
        assert_eq!(
            unique_prefixes(&ids),
            ["01a23c61-515", "01a23c61-516", "01a23c61-9"]
        );
        for (id, short) in ids.iter().zip(unique_prefixes(&ids)) {
            let others = ids.iter().filter(|o| *o != id);
            assert!(others.into_iter().all(|o| !id_starts_with(o, &short)));
            assert!(id_starts_with(id, &short));
        }
    }

    #[test]
    fn the_same_id_twice_or_short_ids_show_whole() {
        let ids = ["abc", "abcdef0123", "abcdef0123", "x"];
        assert_eq!(
            unique_prefixes(&ids),
            ["abc", "abcdef0123", "abcdef0123", "x"]
        );
        assert!(unique_prefixes(&[]).is_empty());
        assert_eq!(unique_prefixes(&["0123456789abc"]), ["01234567"]);
    }

    #[test]
    fn case_is_ignored_and_wide_text_is_cut_on_characters() {
        let ids = ["ABCDEFGH-1", "abcdefgh-2", "ééééééééé1", "ééééééééé2"];
        assert_eq!(
            unique_prefixes(&ids),
            ["ABCDEFGH-1", "abcdefgh-2", "ééééééééé1", "ééééééééé2"]
        );
    }

    #[test]
    fn matching_ignores_dashes_and_case() {
        let id = "01A23C61-5150-7635-b3fd-ab0404bb9f84";
        assert!(id_starts_with(id, "01a23c61"));
        assert!(id_starts_with(id, "01a23c61-51"));
        assert!(id_starts_with(id, "01a23c6151"));
        assert!(id_starts_with(id, id));
        assert!(!id_starts_with(id, "01a23c62"));
        assert!(!id_starts_with(id, ""));
        assert!(!id_starts_with(id, "--"));
        assert!(!id_starts_with("01a2", "01a23"));
    }
}
