//! `pi --login PROVIDER` and `pi --logout PROVIDER`: signing in to a subscription from a
//! terminal without the interactive UI (over SSH, in a container). The address to open is
//! printed (and handed to the system's browser opener where there is a display); a browser on
//! another machine ends on an address this one cannot receive, so a pasted line is taken as
//! the answer too. Ctrl+C cancels. Nothing printed holds a token.

use std::io::{BufRead, IsTerminal, Write};

use tokio_util::sync::CancellationToken;

use crate::host::login::{log_out, sign_in, subscription_named};
use crate::provider::subscription::flows::{BROWSER_TIMEOUT, Notice, SignIn, enterprise_domain};
use crate::provider::subscription::{Kind, Subscriptions};
use crate::setup;
use crate::visible::visible;

fn say(message: &str) {
    eprintln!("pi: {}", visible(message));
}

fn subscriptions(options: &setup::Options) -> (Subscriptions, Option<std::path::PathBuf>) {
    let env = options.env.clone();
    let agent_dir = crate::config::agent_dir(&move |k| env(k));
    let subs = Subscriptions::load(
        agent_dir.clone(),
        options.env.clone(),
        crate::secrets::Secrets::default(),
    );
    (subs, agent_dir)
}

/// Lines typed or piped on stdin, read on a thread of their own.
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// `pi --login PROVIDER`.
pub async fn login(options: &setup::Options, name: &str) -> u8 {
    let Some(kind) = subscription_named(name) else {
        say(&format!(
            "`{name}` is not a subscription. `pi --login` signs in to: {}. For an API key, use \
             /login in pi or set the provider's environment variable.",
            Kind::ALL
                .iter()
                .map(|k| format!("{} ({})", k.provider(), k.label()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return 2;
    };
    let (subs, _) = subscriptions(options);
    let mut lines = stdin_lines();
    let mut domain = None;
    if kind == Kind::Copilot {
        eprint!("GitHub Enterprise domain (Enter for github.com): ");
        let _ = std::io::stderr().flush();
        let typed = lines.recv().await.unwrap_or_default();
        domain = match enterprise_domain(&typed) {
            Ok(d) => d,
            Err(e) => {
                say(&e);
                return 2;
            }
        };
    }
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let interactive = std::io::stdin().is_terminal();
    let request = SignIn {
        kind,
        enterprise_domain: domain,
        pasted: (kind != Kind::Copilot).then_some(lines),
        cancel,
        timeout: BROWSER_TIMEOUT,
    };
    let notify = |n: Notice| match n {
        Notice::OpenUrl { url, .. } => {
            let opened = crate::host::login::open_browser(&options.env, &url);
            eprintln!(
                "{} {}:\n\n  {url}\n",
                if opened {
                    "Opening your browser to sign in to"
                } else {
                    "Open this address in a browser to sign in to"
                },
                kind.label()
            );
            eprintln!(
                "If the browser is on another machine, paste here the address it ends on{}.",
                if interactive { " and press Enter" } else { "" }
            );
        }
        Notice::DeviceCode { url, code } => {
            eprintln!(
                "To sign in to {}, open {url} and enter the code {code}",
                kind.label()
            );
        }
        Notice::Progress(p) => eprintln!("{p}"),
    };
    match sign_in(&subs, request, &notify).await {
        Ok(saved) => {
            let place = saved.map_or("for this run only (no agent folder)".to_string(), |p| {
                format!("in {}", crate::paths::short_home(&p))
            });
            eprintln!(
                "Signed in to {} ({}); saved {place}.",
                kind.label(),
                kind.provider()
            );
            0
        }
        Err(e) => {
            say(&e);
            1
        }
    }
}

/// `pi --logout PROVIDER`.
pub async fn logout(options: &setup::Options, name: &str) -> u8 {
    let (subs, agent_dir) = subscriptions(options);
    match log_out(&subs, agent_dir, name).await {
        Ok(m) => {
            eprintln!("{m}");
            0
        }
        Err(e) => {
            say(&e);
            1
        }
    }
}
