//! Storing a sign-in in `auth.json` and taking it out again (`/login`, `/logout`,
//! `pi --login`, `pi --logout`): one entry in the Node.js pi's shape, every other entry kept,
//! through the file's one locked writer (`config::node::auth::update`).

use serde_json::Value;

use super::{Credentials, Kind, Subscriptions};

impl Subscriptions {
    /// Store a sign-in in `auth.json` (the Node.js pi's shape; other entries kept) and use it
    /// from now on. Where it was written (`None`: no agent folder, this run only).
    pub async fn store(
        &self,
        kind: Kind,
        credentials: Credentials,
    ) -> Result<Option<std::path::PathBuf>, String> {
        self.set(kind, credentials.clone());
        let Some(dir) = self.agent_dir().map(std::path::Path::to_path_buf) else {
            return Ok(None);
        };
        let entry = Value::Object(credentials.to_entry(kind));
        tokio::task::spawn_blocking(move || {
            crate::config::node::auth::update(&dir, |entries| {
                entries.insert(kind.provider().to_string(), entry);
                Ok(())
            })
            .map(|()| crate::config::node::auth::path(&dir))
        })
        .await
        .map_err(|e| e.to_string())?
        .map(Some)
    }

    /// Sign out of `kind`: its entry leaves `auth.json` (other entries kept). Whether there
    /// was one.
    pub async fn sign_out(&self, kind: Kind) -> Result<bool, String> {
        let had = self.is_signed_in(kind);
        self.forget(kind);
        let Some(dir) = self.agent_dir().map(std::path::Path::to_path_buf) else {
            return Ok(had);
        };
        let removed = tokio::task::spawn_blocking(move || {
            crate::config::node::auth::update(&dir, |entries| {
                let is_oauth = entries
                    .get(kind.provider())
                    .and_then(|e| e.get("type"))
                    .and_then(Value::as_str)
                    == Some("oauth");
                Ok(is_oauth && entries.shift_remove(kind.provider()).is_some())
            })
        })
        .await
        .map_err(|e| e.to_string())??;
        Ok(had || removed)
    }
}
