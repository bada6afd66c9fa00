//! The registry (Krook's `register`, `unregister`, `whereis`; Erlang's): names for actors,
//! process-wide.
//!
//! A name maps to one live actor; the entry keeps the actor's message type, so a lookup with
//! the wrong type is a [`RegistryError::WrongType`], never a reinterpretation. An actor's names
//! are removed when it ends (before its links and monitors are told).
//!
//! # Invariants
//! - The table is locked before an actor's record, never the other way round (a dying actor
//!   takes its names out under its own lock, releases it, then locks the table).
//! - An entry is removed by `unregister`, or by its actor's death only if the entry is still
//!   that actor's (a name freed and taken again by another actor stays).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use super::record::PeerRef;
use super::{ActorId, Pid};

/// Names to actors.
type Table = HashMap<Arc<str>, PeerRef>;

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn table() -> MutexGuard<'static, Table> {
    // No user code runs under the lock; ignore poisoning.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a registry operation failed.
///
/// ```
/// use pcml::actor::{self, Ctx, RegistryError};
///
/// let me = Ctx::<u8>::new();
/// actor::register("doc-registry-error", &me.pid()).unwrap();
/// assert!(matches!(
///     actor::register("doc-registry-error", &me.pid()),
///     Err(RegistryError::Taken { .. })
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// The name is already registered to a live actor.
    Taken {
        /// The name.
        name: String,
        /// Who holds it.
        holder: ActorId,
    },
    /// The actor to register has already ended.
    Dead {
        /// The actor.
        actor: ActorId,
    },
    /// No actor is registered under the name.
    NotRegistered {
        /// The name.
        name: String,
    },
    /// The name's actor takes another message type.
    WrongType {
        /// The name.
        name: String,
        /// The type asked for.
        expected: &'static str,
        /// The actor's message type.
        actual: &'static str,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Taken { name, holder } => {
                write!(f, "the name {name:?} is already registered to {holder}")
            }
            RegistryError::Dead { actor } => {
                write!(f, "cannot register {actor}: it has already ended")
            }
            RegistryError::NotRegistered { name } => {
                write!(f, "no actor is registered as {name:?}")
            }
            RegistryError::WrongType {
                name,
                expected,
                actual,
            } => write!(
                f,
                "the actor registered as {name:?} takes {actual}, not {expected}"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Registers `pid` under `name`. Fails if the name is held by a live actor or `pid` has
/// ended. An actor may hold several names; each is freed when it ends.
///
/// ```
/// use pcml::actor::{self, Ctx};
///
/// let mut me = Ctx::<u32>::new();
/// actor::register("doc-register", &me.pid()).unwrap();
/// actor::send_named("doc-register", 7u32).unwrap();
/// assert_eq!(me.receive(), 7);
/// drop(me);
/// assert!(actor::whereis::<u32>("doc-register").is_none());
/// ```
pub fn register<M: Send + 'static>(name: &str, pid: &Pid<M>) -> Result<(), RegistryError> {
    let mut t = table();
    if let Some(holder) = t.get(name) {
        // An actor is marked dead before its names are freed: a name whose holder has
        // ended (its death may have been observed already) is free.
        if holder.alive() {
            return Err(RegistryError::Taken {
                name: name.to_string(),
                holder: holder.peer_id(),
            });
        }
        // Its end frees the name only if it still holds it (`remove_if`).
        t.remove(name);
    }
    let name: Arc<str> = Arc::from(name);
    let peer = pid.peer();
    if !peer.add_name(name.clone()) {
        return Err(RegistryError::Dead { actor: pid.id() });
    }
    t.insert(name, peer);
    Ok(())
}

/// The names registered to actor `id`, in order, for a dump of a thread that has only the
/// actor's id at hand (an async actor's task).
pub(crate) fn names_of(id: ActorId) -> Vec<Arc<str>> {
    let mut names: Vec<Arc<str>> = table()
        .iter()
        .filter(|(_, p)| p.peer_id() == id)
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    names
}

/// Removes `name` from the registry; returns whether it was registered.
///
/// ```
/// let me = pcml::actor::Ctx::<()>::new();
/// pcml::actor::register("doc-unregister", &me.pid()).unwrap();
/// assert!(pcml::actor::unregister("doc-unregister"));
/// assert!(!pcml::actor::unregister("doc-unregister"));
/// ```
pub fn unregister(name: &str) -> bool {
    let removed = table().remove(name);
    match removed {
        Some(peer) => {
            peer.remove_name(name);
            true
        }
        None => false,
    }
}

/// The actor registered as `name`, if any.
///
/// # Panics
/// If the actor takes another message type than `M`, saying which; [`try_whereis`] returns
/// that as an error.
///
/// ```
/// let me = pcml::actor::Ctx::<String>::new();
/// pcml::actor::register("doc-whereis", &me.pid()).unwrap();
/// assert_eq!(pcml::actor::whereis::<String>("doc-whereis"), Some(me.pid()));
/// assert_eq!(pcml::actor::whereis::<String>("doc-nobody"), None);
/// ```
pub fn whereis<M: Send + 'static>(name: &str) -> Option<Pid<M>> {
    match try_whereis(name) {
        Ok(pid) => Some(pid),
        Err(RegistryError::NotRegistered { .. }) => None,
        Err(e) => panic!("pcml::actor::whereis: {e}; ask for the right type, or use try_whereis"),
    }
}

/// The actor registered as `name`, or why there is none of message type `M`.
///
/// ```
/// use pcml::actor::{self, Ctx, RegistryError};
///
/// let me = Ctx::<u8>::new();
/// actor::register("doc-try-whereis", &me.pid()).unwrap();
/// assert!(actor::try_whereis::<u8>("doc-try-whereis").is_ok());
/// assert!(matches!(
///     actor::try_whereis::<String>("doc-try-whereis"),
///     Err(RegistryError::WrongType { .. })
/// ));
/// ```
pub fn try_whereis<M: Send + 'static>(name: &str) -> Result<Pid<M>, RegistryError> {
    // A holder that has ended (its names are freed just after) holds nothing.
    let peer = table()
        .get(name)
        .filter(|p| p.alive())
        .cloned()
        .ok_or_else(|| RegistryError::NotRegistered {
            name: name.to_string(),
        })?;
    let actual = peer.msg_type();
    match peer.downcast::<M>() {
        Ok(rec) => Ok(Pid { rec }),
        Err(_) => Err(RegistryError::WrongType {
            name: name.to_string(),
            expected: std::any::type_name::<M>(),
            actual,
        }),
    }
}

/// Sends `m` to the actor registered as `name`. On failure the error says why and
/// [`NamedSendError::into_inner`] gives the message back.
///
/// ```
/// use pcml::actor::{self, Ctx, RegistryError};
///
/// let err = actor::send_named("doc-send-nobody", 1u8).unwrap_err();
/// assert!(matches!(err.reason, Some(RegistryError::NotRegistered { .. })));
/// assert_eq!(err.into_inner(), 1);
/// ```
pub fn send_named<M: Send + 'static>(name: &str, m: M) -> Result<(), NamedSendError<M>> {
    match try_whereis::<M>(name) {
        Ok(pid) => pid.send(m).map_err(|e| NamedSendError {
            msg: e.0,
            reason: None,
        }),
        Err(e) => Err(NamedSendError {
            msg: m,
            reason: Some(e),
        }),
    }
}

/// The error of [`send_named`]: the message, and why it was not sent.
///
/// ```
/// let err = pcml::actor::send_named("doc-named-error", "hi").unwrap_err();
/// println!("{err}");
/// ```
pub struct NamedSendError<M> {
    /// The message that was not sent.
    pub msg: M,
    /// The registry's error, or `None` if the actor was found but has ended.
    pub reason: Option<RegistryError>,
}

impl<M> NamedSendError<M> {
    /// The message that was not sent.
    ///
    /// ```
    /// assert_eq!(pcml::actor::send_named("doc-nobody-2", 5).unwrap_err().into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> M {
        self.msg
    }
}

impl<M> fmt::Debug for NamedSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedSendError")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<M> fmt::Display for NamedSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Some(e) => write!(f, "send_named: {e}"),
            None => f.write_str("send_named: the registered actor has ended"),
        }
    }
}

impl<M> std::error::Error for NamedSendError<M> {}

/// Removes `name` if it still belongs to `id` (called when `id` ends).
pub(crate) fn remove_if(name: &str, id: ActorId) {
    let mut t = table();
    if t.get(name).is_some_and(|p| p.peer_id() == id) {
        t.remove(name);
    }
}
