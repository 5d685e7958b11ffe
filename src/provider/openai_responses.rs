//! OpenAI Responses API. (stub)
use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::sse::SseEvent;
use super::wire::{HttpRequest, WireApi, WireDecoder};
use crate::agent::stream::ProviderRequest;

pub struct Responses;

impl WireApi for Responses {
    fn build(
        &self,
        _m: &ModelInfo,
        _r: &ProviderRequest,
        _k: Option<&str>,
    ) -> Result<HttpRequest, String> {
        Err("not implemented".into())
    }
    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder)
    }
}

struct Decoder;

impl WireDecoder for Decoder {
    fn event(&mut self, _e: &SseEvent, _o: &mut MessageStream) -> Result<(), String> {
        Ok(())
    }
    fn end(&mut self, _o: &mut MessageStream) {}
}
