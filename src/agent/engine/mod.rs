//! The loop: a run's turns ([`run`]), one message's tool batch ([`batch`]), answers for calls
//! that did not run ([`answer`]), what is fixed for a run ([`config`]), the long-lived
//! [`facade::Agent`] that owns the transcript and the queues (with the hooks a host adds to it,
//! [`host_hooks`]), and [`task`], which carries out one command on it.

pub mod answer;
pub mod batch;
pub mod config;
pub mod facade;
pub mod host_hooks;
pub mod run;
pub mod task;
