//! Inline mode's bookkeeping: which of the transcript's rows have been printed into the
//! terminal's scrollback, and which the live region still shows.
//!
//! The transcript stays the one record of the conversation; [`Printed`] is a mark in it. Each
//! frame, [`Printed::split`] hands over every finished cell after the mark (they are printed
//! once, at the width of that moment, and their cached rows are dropped) and stops at the
//! first cell whose look can still change (a streaming answer, a running tool): that cell and
//! everything after it is live. A streaming answer taller than the room the live region has
//! gives its top rows away as they leave that room, keeping at least its last
//! [`KEEP_LIVE`] rows, which may still change. Those rows are final once printed: until the
//! answer is done it is drawn with the thinking and tool views it started printing with
//! (Ctrl+T and Ctrl+O apply to what comes after), so its rows stay aligned with what is in the
//! scrollback. If the terminal gets wider in the middle, the count of printed rows is scaled
//! down, so a few rows may be printed twice but none is left out.
//!
//! Clearing the transcript (`/new`, a resumed session, a move in the tree) starts the count
//! again: the new conversation is printed below what the scrollback already holds. A very
//! long conversation printed at once keeps to its last [`AT_ONCE`] rows or so, after a line
//! saying what was left out.

use ratatui::text::Line;

use super::cells::{Cell, View};
use super::rows::Rows;
use super::theme::fg;
use super::transcript::Transcript;

/// The last rows of a streaming answer that stay live (its open line and the blank after it).
pub const KEEP_LIVE: usize = 2;

/// About how many rows of a long conversation are printed at once (see
/// [`Printed::split`]): more than most terminals keep in their scrollback.
pub const AT_ONCE: usize = 10_000;

/// What one frame prints and shows.
#[derive(Default)]
pub struct Split {
    /// Rows to print above the live region, in order.
    pub history: Vec<Line<'static>>,
    /// The rows of the conversation the live region shows (the last of them, at most the room).
    pub live: Vec<Line<'static>>,
}

/// How much of the transcript is in the scrollback.
#[derive(Default)]
pub struct Printed {
    /// The transcript's epoch the counts are for.
    epoch: u64,
    /// Cells printed whole.
    cells: usize,
    /// Rows printed of the cell after them (the top of a streaming answer).
    rows: usize,
    /// The width those rows were printed at.
    width: usize,
    /// The thinking and tool views they were printed with.
    show_thinking: bool,
    expand_tools: bool,
}

impl Printed {
    /// Take the rows that are ready for the scrollback, and the live rows (at most `room`).
    pub fn split(&mut self, t: &mut Transcript, width: usize, view: &View, room: usize) -> Split {
        self.follow(t, width);
        let mut out = Split::default();
        self.skip_the_oldest(t, width, view, &mut out.history);
        while self.cells < t.len() && !t.get(self.cells).is_some_and(Cell::is_live) {
            let rows = self.rows_of(t, self.cells, width, view);
            out.history.extend(rows.iter().skip(self.rows).cloned());
            t.release(self.cells);
            self.cells += 1;
            self.rows = 0;
        }
        let parts: Vec<Rows> = (self.cells..t.len())
            .map(|i| self.rows_of(t, i, width, view))
            .collect();
        let first = parts
            .first()
            .map_or(0, |r| r.len().saturating_sub(self.rows));
        let total = first + parts.iter().skip(1).map(Rows::len).sum::<usize>();
        // A streaming answer taller than the room: its top rows go to the scrollback.
        let streaming = matches!(t.get(self.cells), Some(Cell::Assistant(a)) if a.streaming);
        if streaming && total > room {
            let n = (total - room).min(first.saturating_sub(KEEP_LIVE));
            if n > 0 {
                if self.rows == 0 {
                    self.width = width;
                    self.show_thinking = view.show_thinking;
                    self.expand_tools = view.expand_tools;
                }
                if let Some(rows) = parts.first() {
                    out.history
                        .extend(rows.iter().skip(self.rows).take(n).cloned());
                }
                self.rows += n;
            }
        }
        // The live rows: the last `room` of what is left, collected from the end.
        let mut left = room;
        let mut live: Vec<Line<'static>> = Vec::new();
        for (k, rows) in parts.iter().enumerate().rev() {
            if left == 0 {
                break;
            }
            let skip = if k == 0 { self.rows } else { 0 };
            let own = rows.len().saturating_sub(skip);
            let take = own.min(left);
            live.extend(rows.iter().rev().take(take).cloned());
            left -= take;
        }
        live.reverse();
        out.live = live;
        out
    }

    /// A long conversation waiting to be printed at once (a resumed session, a move in the
    /// tree): only its last [`AT_ONCE`] rows or so are printed (a terminal keeps no more than
    /// that in its scrollback anyway, and rendering them all would hold up the first frame),
    /// after a line saying what was left out. Only the cells kept are rendered.
    fn skip_the_oldest(
        &mut self,
        t: &mut Transcript,
        width: usize,
        view: &View,
        history: &mut Vec<Line<'static>>,
    ) {
        if self.rows > 0 {
            return;
        }
        let end = (self.cells..t.len())
            .find(|&i| t.get(i).is_some_and(Cell::is_live))
            .unwrap_or(t.len());
        // A frame's worth of new cells is never that many rows: look only at long runs.
        if end - self.cells < AT_ONCE / 100 {
            return;
        }
        let mut rows = 0;
        let mut first = end;
        while first > self.cells {
            rows += t.rows(first - 1, width, view).len();
            if rows > AT_ONCE {
                break;
            }
            first -= 1;
        }
        if first == self.cells {
            return;
        }
        let prompts = (self.cells..first)
            .filter(|&i| matches!(t.get(i), Some(Cell::User(_))))
            .count();
        let note = match prompts {
            0 => "… the start of this conversation is not printed here; /tree shows all of it"
                .to_string(),
            1 => "… 1 earlier prompt and its answers are not printed here; /tree shows them"
                .to_string(),
            n => format!(
                "… {n} earlier prompts and their answers are not printed here; /tree shows them"
            ),
        };
        history.push(Line::styled(note, fg(|t| t.dim)));
        history.push(Line::default());
        for i in self.cells..first {
            t.release(i);
        }
        self.cells = first;
    }

    /// Everything not printed yet, live cells as they look now (quitting); all of it counts
    /// as printed afterwards.
    pub fn rest(&mut self, t: &mut Transcript, width: usize, view: &View) -> Vec<Line<'static>> {
        self.follow(t, width);
        let mut out = Vec::new();
        while self.cells < t.len() {
            let rows = self.rows_of(t, self.cells, width, view);
            out.extend(rows.iter().skip(self.rows).cloned());
            t.release(self.cells);
            self.cells += 1;
            self.rows = 0;
        }
        out
    }

    /// Start again after the transcript was cleared; rescale a partly printed answer's count
    /// after a change of width.
    fn follow(&mut self, t: &Transcript, width: usize) {
        if t.epoch() != self.epoch || self.cells > t.len() {
            *self = Printed {
                epoch: t.epoch(),
                ..Printed::default()
            };
        }
        if self.rows > 0 && width != self.width {
            // Wider: the same text takes fewer rows. Narrower: more, so the old count repeats
            // some rather than skipping any.
            if width > self.width {
                self.rows = self.rows * self.width / width.max(1);
            }
            self.width = width;
        }
    }

    /// Cell `i`'s rows; a partly printed answer keeps the views it started printing with.
    fn rows_of(&self, t: &mut Transcript, i: usize, width: usize, view: &View) -> Rows {
        if i == self.cells && self.rows > 0 {
            let kept = View {
                show_thinking: self.show_thinking,
                expand_tools: self.expand_tools,
                ..view.clone()
            };
            return t.get(i).map(|c| c.rows(width, &kept)).unwrap_or_default();
        }
        t.rows(i, width, view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::AssistantMessage;
    use std::time::Instant;

    fn view() -> View {
        View {
            show_thinking: true,
            expand_tools: false,
            now: Instant::now(),
            expand_key: "Ctrl+O".into(),
        }
    }

    /// The rows' text, blank rows left out.
    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.to_string().trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    fn answer(text: &str, streaming: bool) -> Cell {
        let m = AssistantMessage {
            content: vec![crate::agent::protocol::types::ContentBlock::text(text)],
            ..Default::default()
        };
        Cell::assistant(m, streaming)
    }

    #[test]
    fn finished_cells_are_printed_once_and_live_ones_stay() {
        let mut t = Transcript::default();
        let mut p = Printed::default();
        let v = view();
        t.push(Cell::Info("header".into()));
        t.push(Cell::User("hello".into()));
        let streaming = t.push(answer("partial\n", true));
        let s = p.split(&mut t, 40, &v, 10);
        assert!(text(&s.history).contains(&"header".to_string()));
        assert!(text(&s.history).iter().any(|l| l.contains("hello")));
        assert!(text(&s.live).iter().any(|l| l.contains("partial")));
        // Nothing new: nothing printed again.
        let again = p.split(&mut t, 40, &v, 10);
        assert!(again.history.is_empty());
        if let Some(c) = t.get_mut(streaming) {
            *c = answer("partial and done", false);
        }
        let done = p.split(&mut t, 40, &v, 10);
        assert!(
            text(&done.history)
                .iter()
                .any(|l| l.contains("partial and done"))
        );
        assert!(done.live.is_empty());
    }

    #[test]
    fn a_tall_streaming_answer_gives_its_top_rows_away() {
        let mut t = Transcript::default();
        let mut p = Printed::default();
        let v = view();
        let body: Vec<String> = (0..30).map(|i| format!("para {i}")).collect();
        let idx = t.push(answer(&body.join("\n\n"), true));
        let s = p.split(&mut t, 40, &v, 10);
        assert_eq!(s.live.len(), 10);
        let first = text(&s.history);
        assert!(first[0].contains("para 0"), "{first:?}");
        // The answer finishes: the rest is printed, nothing twice, nothing missing.
        if let Some(c) = t.get_mut(idx) {
            *c = answer(&body.join("\n\n"), false);
        }
        let end = p.split(&mut t, 40, &v, 10);
        let mut all = first;
        all.extend(text(&end.history));
        let paras: Vec<&String> = all.iter().filter(|l| l.starts_with("para")).collect();
        assert_eq!(paras.len(), 30, "{all:?}");
        assert!(end.live.is_empty());
    }

    #[test]
    fn a_wider_terminal_in_the_middle_of_an_answer_skips_nothing() {
        let mut t = Transcript::default();
        let mut p = Printed::default();
        let v = view();
        let body: Vec<String> = (0..30)
            .map(|i| format!("para {i:02} with enough words to wrap once at forty columns"))
            .collect();
        let idx = t.push(answer(&body.join("\n\n"), true));
        let mut all = text(&p.split(&mut t, 40, &v, 10).history);
        assert!(!all.is_empty());
        if let Some(c) = t.get_mut(idx) {
            *c = answer(&body.join("\n\n"), false);
        }
        all.extend(text(&p.split(&mut t, 80, &v, 10).history));
        for i in 0..30 {
            let para = format!("para {i:02}");
            assert!(all.iter().any(|l| l.starts_with(&para)), "{para}: {all:#?}");
        }
    }

    #[test]
    fn a_very_long_conversation_prints_its_end_and_says_what_it_left_out() {
        let mut t = Transcript::default();
        let mut p = Printed::default();
        let v = view();
        for i in 0..4000 {
            t.push(Cell::User(format!("prompt {i}")));
            t.push(Cell::Info(format!("answer {i}")));
        }
        let history = text(&p.split(&mut t, 40, &v, 10).history);
        assert!(history.len() <= AT_ONCE, "{}", history.len());
        assert!(history[0].contains("earlier prompts and their answers are not printed"));
        assert!(history.last().unwrap().contains("answer 3999"));
        assert!(!history.iter().any(|l| l.trim() == "prompt 0"));
        assert!(history.iter().any(|l| l.trim() == "prompt 3999"));
        // Short conversations are printed whole.
        t.clear();
        for i in 0..50 {
            t.push(Cell::Info(format!("line {i}")));
        }
        let history = text(&p.split(&mut t, 40, &v, 10).history);
        assert_eq!(history.len(), 50);
        assert_eq!(history[0], "line 0");
    }

    #[test]
    fn clearing_the_transcript_starts_the_count_again() {
        let mut t = Transcript::default();
        let mut p = Printed::default();
        let v = view();
        t.push(Cell::Info("one".into()));
        t.push(Cell::Info("two".into()));
        assert_eq!(text(&p.split(&mut t, 40, &v, 10).history), ["one", "two"]);
        t.clear();
        t.push(Cell::Info("three".into()));
        assert_eq!(text(&p.split(&mut t, 40, &v, 10).history), ["three"]);
        t.push(Cell::Info("four".into()));
        assert_eq!(text(&p.rest(&mut t, 40, &v)), ["four"]);
    }
}
