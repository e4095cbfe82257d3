//! The errors a zkCli command can end with, displayed as zkCli prints them and carrying the
//! exit status zkCli would leave.

use super::format;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    /// `CliParseException`: a usage line or commons-cli's exception text.
    #[error("{0}")]
    Parse(String),
    /// `MalformedCommandException`: a usage line or a rule of the command.
    #[error("{0}")]
    Malformed(String),
    /// `MalformedPathException`: the client-side path check.
    #[error("{0}")]
    MalformedPath(String),
    /// `CliWrapperException` around a `KeeperException` with ZooKeeper's error code.
    #[error("{}", format::cli_error(*code, path.as_deref()))]
    Keeper { code: i32, path: Option<String> },
    /// `CommandNotFoundException` (zkCli's message really does repeat itself).
    #[error("Command not found: Command not found {0}")]
    NotFound(String),
    /// No command on the line: `MalformedCommandException("No command entered")`.
    #[error("No command entered")]
    NoCommand,
    /// A Java exception zkCli does not catch (a bad number, `addWatch` of a bad path): the
    /// JVM prints it and exits with 1, so a script stops here.
    #[error("Exception in thread \"main\" {0}")]
    Uncaught(String),
}

impl CliError {
    pub fn keeper(code: i32, path: &str) -> CliError {
        CliError::Keeper { code, path: Some(path.to_string()) }
    }

    /// The exit status zkCli leaves for the last command.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::NotFound(_) => 127,
            _ => 1,
        }
    }

    /// `NumberFormatException` from `Integer.parseInt` and friends.
    pub fn number(message: String) -> CliError {
        CliError::Uncaught(format!("java.lang.NumberFormatException: {message}"))
    }
}
