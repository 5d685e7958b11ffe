//! Terminal input, read on a thread of its own and handed to the loop through a channel.
//!
//! The loop wakes for every agent event, and asking crossterm for input that often would
//! contend with a reading thread for crossterm's lock; so one thread reads (waiting at most
//! [`POLL`] at a time, any key wakes it at once) and sends what it reads. It pauses while
//! another program (the external editor) owns the terminal: [`Input::pause`] returns only once
//! the thread has stopped reading, so no key meant for that program is taken.

use std::sync::mpsc::TryRecvError;
use std::time::Duration;

use crossterm::event::Event;
use tokio::sync::{mpsc, oneshot};

pub type InputEvent = std::io::Result<Event>;

/// The longest the thread waits for input before it looks for orders (the most a pause
/// waits).
const POLL: Duration = Duration::from_millis(100);

enum Order {
    /// Stop reading; say so on the sender.
    Pause(oneshot::Sender<()>),
    Resume,
}

pub struct Input {
    /// What the terminal sent; closed once reading failed (the error is the last item).
    pub events: mpsc::UnboundedReceiver<InputEvent>,
    orders: std::sync::mpsc::Sender<Order>,
}

impl Input {
    /// Start reading the terminal.
    pub fn start() -> std::io::Result<Input> {
        let (tx, events) = mpsc::unbounded_channel();
        let (orders, inbox) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("pi-input".into())
            .spawn(move || read(&tx, &inbox))?;
        Ok(Input { events, orders })
    }

    /// Stop reading the terminal; returns once nothing reads it.
    pub async fn pause(&mut self) {
        let (ack, acked) = oneshot::channel();
        if self.orders.send(Order::Pause(ack)).is_ok() {
            let _ = acked.await;
        }
    }

    /// Read the terminal again after [`Input::pause`].
    pub fn resume(&mut self) {
        let _ = self.orders.send(Order::Resume);
    }
}

/// The reading thread: until its `Input` is dropped (the order channel closes) or reading
/// fails.
fn read(tx: &mpsc::UnboundedSender<InputEvent>, inbox: &std::sync::mpsc::Receiver<Order>) {
    loop {
        match inbox.try_recv() {
            Ok(Order::Pause(ack)) => {
                let _ = ack.send(());
                loop {
                    match inbox.recv() {
                        Ok(Order::Resume) => break,
                        Ok(Order::Pause(ack)) => {
                            let _ = ack.send(());
                        }
                        Err(_) => return,
                    }
                }
            }
            Ok(Order::Resume) | Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => return,
        }
        match crossterm::event::poll(POLL) {
            Ok(false) => {}
            Ok(true) => {
                let event = crossterm::event::read();
                let failed = event.is_err();
                if tx.send(event).is_err() || failed {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}
