//! A cell's rendered rows as a list of shared chunks.
//!
//! A streaming answer's finished blocks are rendered once and kept by its
//! [`StreamCache`](super::markdown::StreamCache); handing them to the transcript every frame
//! as a fresh `Vec` would copy every span of the whole answer each time. [`Rows`] holds
//! `Arc`ed chunks instead, so a frame costs one reference count per chunk plus the rows that
//! really are new. Reading is by iteration (both ends) and length, which is all the transcript
//! needs.

use std::sync::Arc;

use ratatui::text::Line;

#[derive(Clone, Default)]
pub struct Rows {
    parts: Vec<Arc<[Line<'static>]>>,
    len: usize,
}

impl Rows {
    /// Append a chunk that others may share.
    pub fn push_shared(&mut self, part: Arc<[Line<'static>]>) {
        if !part.is_empty() {
            self.len += part.len();
            self.parts.push(part);
        }
    }

    /// Append rows of one's own.
    pub fn extend(&mut self, rows: Vec<Line<'static>>) {
        self.push_shared(rows.into());
    }

    /// Append one row of one's own.
    pub fn push(&mut self, row: Line<'static>) {
        self.extend(vec![row]);
    }

    /// Append another list's chunks (shared, not copied).
    pub fn append(&mut self, other: Rows) {
        self.len += other.len;
        self.parts.extend(other.parts);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Line<'static>> {
        self.parts.iter().flat_map(|p| p.iter())
    }

    /// The rows copied into one `Vec`.
    pub fn to_vec(&self) -> Vec<Line<'static>> {
        self.iter().cloned().collect()
    }
}

#[cfg(test)]
impl Rows {
    /// Whether the two hold a chunk in common (the same allocation).
    pub fn shares_with(&self, other: &Rows) -> bool {
        self.parts
            .iter()
            .any(|a| other.parts.iter().any(|b| Arc::ptr_eq(a, b)))
    }
}

impl From<Vec<Line<'static>>> for Rows {
    fn from(rows: Vec<Line<'static>>) -> Self {
        let mut r = Rows::default();
        r.extend(rows);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: impl Iterator<Item = impl std::ops::Deref<Target = Line<'static>>>) -> String {
        rows.map(|l| l.to_string()).collect::<Vec<_>>().join(",")
    }

    #[test]
    fn chunks_read_as_one_list_from_either_end() {
        let mut rows = Rows::from(vec![Line::from("a"), Line::from("b")]);
        rows.extend(Vec::new());
        let shared: Arc<[Line<'static>]> = vec![Line::from("c")].into();
        let mut more = Rows::default();
        more.push_shared(shared.clone());
        more.push(Line::from("d"));
        rows.append(more.clone());
        assert_eq!(rows.len(), 4);
        assert_eq!(text(rows.iter()), "a,b,c,d");
        assert_eq!(text(rows.iter().rev()), "d,c,b,a");
        assert_eq!(text(rows.iter().skip(3)), "d");
        assert_eq!(rows.to_vec().len(), 4);
        assert!(rows.shares_with(&more));
        assert!(Rows::default().is_empty());
    }
}
