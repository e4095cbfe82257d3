//! ZooKeeper's numeric vocabularies: op codes, error codes, event types, states, create modes,
//! permission bits and special xids (values from ZooDefs.java and KeeperException.java).

/// Request op codes (`ZooDefs.OpCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpCode {
    Notification = 0,
    Create = 1,
    Delete = 2,
    Exists = 3,
    GetData = 4,
    SetData = 5,
    GetAcl = 6,
    SetAcl = 7,
    GetChildren = 8,
    Sync = 9,
    Ping = 11,
    GetChildren2 = 12,
    Check = 13,
    Multi = 14,
    Create2 = 15,
    Reconfig = 16,
    CheckWatches = 17,
    RemoveWatches = 18,
    CreateContainer = 19,
    DeleteContainer = 20,
    CreateTtl = 21,
    MultiRead = 22,
    Auth = 100,
    SetWatches = 101,
    Sasl = 102,
    GetEphemerals = 103,
    GetAllChildrenNumber = 104,
    SetWatches2 = 105,
    AddWatch = 106,
    WhoAmI = 107,
    CreateSession = -10,
    CloseSession = -11,
    Error = -1,
}

impl OpCode {
    pub fn from_i32(v: i32) -> Option<OpCode> {
        use OpCode::*;
        Some(match v {
            0 => Notification,
            1 => Create,
            2 => Delete,
            3 => Exists,
            4 => GetData,
            5 => SetData,
            6 => GetAcl,
            7 => SetAcl,
            8 => GetChildren,
            9 => Sync,
            11 => Ping,
            12 => GetChildren2,
            13 => Check,
            14 => Multi,
            15 => Create2,
            16 => Reconfig,
            17 => CheckWatches,
            18 => RemoveWatches,
            19 => CreateContainer,
            20 => DeleteContainer,
            21 => CreateTtl,
            22 => MultiRead,
            100 => Auth,
            101 => SetWatches,
            102 => Sasl,
            103 => GetEphemerals,
            104 => GetAllChildrenNumber,
            105 => SetWatches2,
            106 => AddWatch,
            107 => WhoAmI,
            -10 => CreateSession,
            -11 => CloseSession,
            -1 => Error,
            _ => return None,
        })
    }
}

/// ZooKeeper error codes (`KeeperException.Code`), sent in `ReplyHeader.err`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[repr(i32)]
pub enum ErrorCode {
    #[error("OK")]
    Ok = 0,
    #[error("SystemError")]
    SystemError = -1,
    #[error("RuntimeInconsistency")]
    RuntimeInconsistency = -2,
    #[error("DataInconsistency")]
    DataInconsistency = -3,
    #[error("ConnectionLoss")]
    ConnectionLoss = -4,
    #[error("MarshallingError")]
    MarshallingError = -5,
    #[error("Unimplemented")]
    Unimplemented = -6,
    #[error("OperationTimeout")]
    OperationTimeout = -7,
    #[error("BadArguments")]
    BadArguments = -8,
    #[error("UnknownSession")]
    UnknownSession = -12,
    #[error("NewConfigNoQuorum")]
    NewConfigNoQuorum = -13,
    #[error("ReconfigInProgress")]
    ReconfigInProgress = -14,
    #[error("APIError")]
    ApiError = -100,
    #[error("NoNode")]
    NoNode = -101,
    #[error("NoAuth")]
    NoAuth = -102,
    #[error("BadVersion")]
    BadVersion = -103,
    #[error("NoChildrenForEphemerals")]
    NoChildrenForEphemerals = -108,
    #[error("NodeExists")]
    NodeExists = -110,
    #[error("NotEmpty")]
    NotEmpty = -111,
    #[error("SessionExpired")]
    SessionExpired = -112,
    #[error("InvalidCallback")]
    InvalidCallback = -113,
    #[error("InvalidACL")]
    InvalidAcl = -114,
    #[error("AuthFailed")]
    AuthFailed = -115,
    #[error("SessionMoved")]
    SessionMoved = -118,
    #[error("NotReadOnly")]
    NotReadOnly = -119,
    #[error("EphemeralOnLocalSession")]
    EphemeralOnLocalSession = -120,
    #[error("NoWatcher")]
    NoWatcher = -121,
    #[error("RequestTimeout")]
    RequestTimeout = -122,
    #[error("ReconfigDisabled")]
    ReconfigDisabled = -123,
    #[error("SessionClosedRequireSaslAuth")]
    SessionClosedRequireSaslAuth = -124,
    #[error("QuotaExceeded")]
    QuotaExceeded = -125,
    #[error("ThrottledOp")]
    ThrottledOp = -127,
}

impl ErrorCode {
    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_i32(v: i32) -> Option<ErrorCode> {
        use ErrorCode::*;
        Some(match v {
            0 => Ok,
            -1 => SystemError,
            -2 => RuntimeInconsistency,
            -3 => DataInconsistency,
            -4 => ConnectionLoss,
            -5 => MarshallingError,
            -6 => Unimplemented,
            -7 => OperationTimeout,
            -8 => BadArguments,
            -12 => UnknownSession,
            -13 => NewConfigNoQuorum,
            -14 => ReconfigInProgress,
            -100 => ApiError,
            -101 => NoNode,
            -102 => NoAuth,
            -103 => BadVersion,
            -108 => NoChildrenForEphemerals,
            -110 => NodeExists,
            -111 => NotEmpty,
            -112 => SessionExpired,
            -113 => InvalidCallback,
            -114 => InvalidAcl,
            -115 => AuthFailed,
            -118 => SessionMoved,
            -119 => NotReadOnly,
            -120 => EphemeralOnLocalSession,
            -121 => NoWatcher,
            -122 => RequestTimeout,
            -123 => ReconfigDisabled,
            -124 => SessionClosedRequireSaslAuth,
            -125 => QuotaExceeded,
            -127 => ThrottledOp,
            _ => return None,
        })
    }
}

/// Watch event types (`Watcher.Event.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum EventType {
    None = -1,
    NodeCreated = 1,
    NodeDeleted = 2,
    NodeDataChanged = 3,
    NodeChildrenChanged = 4,
    DataWatchRemoved = 5,
    ChildWatchRemoved = 6,
    PersistentWatchRemoved = 7,
}

/// Session states carried in notifications (`Watcher.Event.KeeperState`).
pub const STATE_SYNC_CONNECTED: i32 = 3;

/// Create flags (`CreateMode.toFlag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    Ephemeral,
    PersistentSequential,
    EphemeralSequential,
    Container,
    PersistentWithTtl,
    PersistentSequentialWithTtl,
}

impl CreateMode {
    pub fn from_flags(flags: i32) -> Option<CreateMode> {
        use CreateMode::*;
        Some(match flags {
            0 => Persistent,
            1 => Ephemeral,
            2 => PersistentSequential,
            3 => EphemeralSequential,
            4 => Container,
            5 => PersistentWithTtl,
            6 => PersistentSequentialWithTtl,
            _ => return None,
        })
    }
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }
    pub fn is_ttl(self) -> bool {
        matches!(self, CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl)
    }
}

/// Permission bits (`ZooDefs.Perms`).
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = 31;
}

/// Watcher types of checkWatches/removeWatches (`Watcher.WatcherType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatcherType {
    Children = 1,
    Data = 2,
    Any = 3,
    Persistent = 4,
    PersistentRecursive = 5,
}

impl WatcherType {
    pub fn from_i32(v: i32) -> Option<WatcherType> {
        Some(match v {
            1 => WatcherType::Children,
            2 => WatcherType::Data,
            3 => WatcherType::Any,
            4 => WatcherType::Persistent,
            5 => WatcherType::PersistentRecursive,
            _ => return None,
        })
    }
}

/// Special xids.
pub mod xid {
    /// Server-pushed watch notification.
    pub const NOTIFICATION: i32 = -1;
    /// Ping.
    pub const PING: i32 = -2;
    /// Auth packet.
    pub const AUTH: i32 = -4;
    /// setWatches as sent by old clients (new clients overwrite it with a normal xid).
    pub const SET_WATCHES: i32 = -8;
}
