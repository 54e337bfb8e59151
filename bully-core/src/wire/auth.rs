//! Cluster keys and the tag that authenticates a frame.

use core::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::error::{SetupError, WireError};
use super::frame::TAG_LEN;
use super::ids::KeyId;

type HmacSha256 = Hmac<Sha256>;

/// The shortest key secret [`Key::new`] accepts, in bytes. Use 32 random bytes
/// (the size of an HMAC-SHA256 block's worth of security); 16 is the floor.
pub const MIN_KEY_LEN: usize = 16;

/// A cluster key for HMAC-SHA256, with its id.
///
/// The secret itself is not kept: only the HMAC state keyed with it, so that each
/// frame costs two SHA-256 compressions less. `Debug` shows the id only.
///
/// ```
/// use bully_core::wire::{Key, KeyId, SetupError};
///
/// let key = Key::new(KeyId(1), b"32 bytes of secret random data!!")?;
/// assert_eq!(key.id(), KeyId(1));
/// assert!(Key::new(KeyId(1), b"short").is_err());
/// # Ok::<(), SetupError>(())
/// ```
#[derive(Clone)]
pub struct Key {
    id: KeyId,
    mac: HmacSha256,
}

impl Key {
    /// A key from its id and secret. The secret must be at least [`MIN_KEY_LEN`]
    /// bytes; the id must not be [`KeyId::NONE`].
    pub fn new(id: KeyId, secret: &[u8]) -> Result<Key, SetupError> {
        if id == KeyId::NONE {
            return Err(SetupError::ReservedKeyId);
        }
        let too_short = SetupError::KeyTooShort {
            len: secret.len(),
            min: MIN_KEY_LEN,
        };
        if secret.len() < MIN_KEY_LEN {
            return Err(too_short);
        }
        // HMAC takes keys of any length, so this cannot fail; map it anyway rather
        // than unwrap.
        let mac = HmacSha256::new_from_slice(secret).map_err(|_| too_short)?;
        Ok(Key { id, mac })
    }

    /// The key's id, written in the header of every frame it authenticates.
    pub fn id(&self) -> KeyId {
        self.id
    }

    fn tag(&self, authenticated: &[u8]) -> [u8; TAG_LEN] {
        self.mac
            .clone()
            .chain_update(authenticated)
            .finalize()
            .into_bytes()
            .into()
    }

    fn verify(&self, authenticated: &[u8], tag: &[u8; TAG_LEN]) -> Result<(), WireError> {
        // verify_slice compares in constant time.
        self.mac
            .clone()
            .chain_update(authenticated)
            .verify_slice(tag)
            .map_err(|_| WireError::BadTag)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// How frames are authenticated. There is deliberately no default: a codec without
/// authentication exists only when someone wrote `Auth::None`.
///
/// # Rotating keys
///
/// Frames are always sent with `current` and accepted with `current` or `previous`.
/// To rotate without a moment where some node refuses another's frames, roll the
/// configuration out in three steps, each on every node before the next begins:
///
/// 1. `current: old, previous: Some(new)`: everyone accepts the new key.
/// 2. `current: new, previous: Some(old)`: everyone sends with it.
/// 3. `current: new, previous: None`: the old key is retired.
///
/// [`Codec::set_auth`](super::Codec::set_auth) changes keys without losing the
/// replay windows.
#[derive(Clone, Debug)]
#[non_exhaustive]
// Built once per codec and read on every frame: boxing the keys would only add an
// indirection to the hot path to save a few hundred bytes nobody copies.
#[allow(clippy::large_enum_variant)]
pub enum Auth {
    /// No authentication: any host that can reach the socket can speak for any
    /// member. The tag is then a plain SHA-256 of the header and body, which catches
    /// corruption but not forgery. For tests and trusted networks only.
    None,
    /// HMAC-SHA256 with a cluster key shared by every member.
    Hmac {
        /// The key frames are sent with (and accepted with).
        current: Key,
        /// A second key accepted but never sent with: the one being retired, or the
        /// one about to come in (see the rotation steps above).
        previous: Option<Key>,
    },
}

impl Auth {
    /// HMAC-SHA256 with one key and no rotation in progress.
    pub fn hmac(current: Key) -> Auth {
        Auth::Hmac {
            current,
            previous: None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), SetupError> {
        match self {
            Auth::Hmac {
                current,
                previous: Some(previous),
            } if current.id == previous.id => Err(SetupError::DuplicateKeyId(current.id)),
            _ => Ok(()),
        }
    }

    /// The key id this codec writes into the frames it sends.
    pub(crate) fn sending_key(&self) -> KeyId {
        match self {
            Auth::None => KeyId::NONE,
            Auth::Hmac { current, .. } => current.id,
        }
    }

    /// The tag over `authenticated` (the header and body) with the sending key.
    pub(crate) fn tag(&self, authenticated: &[u8]) -> [u8; TAG_LEN] {
        match self {
            Auth::None => Sha256::digest(authenticated).into(),
            Auth::Hmac { current, .. } => current.tag(authenticated),
        }
    }

    /// Checks a received frame's tag with the key its header names.
    pub(crate) fn verify(
        &self,
        key: KeyId,
        authenticated: &[u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), WireError> {
        match self {
            Auth::None if key == KeyId::NONE => {
                // Nothing secret to leak, so a plain comparison will do.
                if Sha256::digest(authenticated).as_slice() == tag {
                    Ok(())
                } else {
                    Err(WireError::BadTag)
                }
            }
            Auth::None => Err(WireError::UnknownKey(key)),
            Auth::Hmac { current, .. } if current.id == key => current.verify(authenticated, tag),
            Auth::Hmac {
                previous: Some(previous),
                ..
            } if previous.id == key => previous.verify(authenticated, tag),
            Auth::Hmac { .. } => Err(WireError::UnknownKey(key)),
        }
    }
}
