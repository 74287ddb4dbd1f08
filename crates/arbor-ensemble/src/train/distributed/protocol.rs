//! The messages of level-wise training: what a piece of the rows passes on
//! in a job, what the job's merge hands the driver, in one enum with one
//! encoding. Every backend (a cluster, one session, this process's memory)
//! moves these bytes and nothing else.

use crate::data::label::Classes;
use crate::data::summary::LevelSummary;
use crate::train::distributed::boosting::LevelBoosting;
use crate::train::distributed::forest::LevelForest;
use crate::train::distributed::state::{LevelState, LevelSums};
use crate::{Algorithm, ArborError, CheckedParams, Result, Task};

/// The tag of [`Message::Summary`]'s bytes.
const SUMMARY: u8 = 0;
/// The tag of [`Message::Sums`]'s bytes.
const SUMS: u8 = 1;
/// The tag of [`Message::Grow`]'s bytes.
const GROW: u8 = 2;
/// The tag of [`Message::OneNode`]'s bytes.
const ONE_NODE: u8 = 3;

/// One message of level-wise training.
///
/// A summary job's pieces each pass on a [`Message::Summary`]; their merge
/// concludes ([`Message::conclude`]) in a [`Message::Grow`] or a
/// [`Message::OneNode`]. A level job's pieces each pass on
/// [`Message::Sums`], and so does its merge: the driver grows the level.
#[derive(Debug)]
pub enum Message {
    /// One or more pieces' summary of their rows.
    Summary(LevelSummary),
    /// One or more pieces' sums for a level.
    Sums(LevelSums),
    /// Training goes on (or is done) from this state.
    Grow(Box<LevelState>),
    /// The rows or options need training on one node, for this reason.
    OneNode(String),
}

impl Message {
    /// The message as bytes: a tag, then its payload's own bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (tag, payload) = match self {
            Message::Summary(summary) => (SUMMARY, summary.to_bytes()),
            Message::Sums(sums) => (SUMS, sums.to_bytes()),
            Message::Grow(state) => (GROW, state.to_bytes()),
            Message::OneNode(reason) => (ONE_NODE, reason.as_bytes().to_vec()),
        };
        let mut bytes = Vec::with_capacity(1 + payload.len());
        bytes.push(tag);
        bytes.extend_from_slice(&payload);
        bytes
    }

    /// A message read back from [`Message::to_bytes`]; corrupt bytes are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Message> {
        match bytes.split_first() {
            Some((&SUMMARY, summary)) => Ok(Message::Summary(LevelSummary::from_bytes(summary)?)),
            Some((&SUMS, sums)) => Ok(Message::Sums(LevelSums::from_bytes(sums)?)),
            Some((&GROW, state)) => Ok(Message::Grow(Box::new(LevelState::from_bytes(state)?))),
            Some((&ONE_NODE, reason)) => Ok(Message::OneNode(String::from_utf8_lossy(reason).into_owned())),
            Some((tag, _)) => Err(ArborError::Data(format!("a level-wise training message has an unknown tag {tag}"))),
            None => Err(ArborError::Data("a level-wise training message is empty".into())),
        }
    }

    /// Adds another piece's message of the same job: summaries merge with
    /// summaries, sums with sums.
    pub fn merge(&mut self, other: Message) -> Result<()> {
        match (self, other) {
            (Message::Summary(a), Message::Summary(b)) => a.merge(b),
            (Message::Sums(a), Message::Sums(b)) => a.merge(b),
            (a, b) => Err(ArborError::Data(format!("level-wise training merged a {} with a {}", a.kind(), b.kind()))),
        }
    }

    /// The start of training from every piece's merged summary, with
    /// parameters checked for the summary's task ([`CheckedParams::for_task`]):
    /// a [`Message::Grow`], or a [`Message::OneNode`] with the reason
    /// levels cannot train these rows or options. No rows is an error
    /// ([`ArborError::NothingToTrain`]; a job's merge reports it as the reason).
    pub fn start(params: &CheckedParams, mut summary: LevelSummary) -> Result<Message> {
        if let Some(reason) = LevelState::unsupported(params) {
            return Ok(Message::OneNode(reason));
        }
        let (Some(task), Some(label)) = (summary.task, summary.label.take()) else {
            return Err(ArborError::NothingToTrain("training data is empty (0 rows)".into()));
        };
        let params = &params.for_task(task)?;
        if task == Task::Classification && label.classes.as_ref().map_or(0, Classes::len) < 2 {
            return Ok(Message::OneNode("the label holds a single class".into()));
        }
        let begun = match params.algorithm.0 {
            Algorithm::GradientBoosting => {
                LevelBoosting::begin(params, task, label, summary)?.map(LevelState::Boosting)
            }
            Algorithm::RandomForest => LevelForest::begin(params, task, label, summary)?.map(LevelState::Forest),
        };
        Ok(match begun {
            Ok(state) => Message::Grow(Box::new(state)),
            Err(reason) => Message::OneNode(reason),
        })
    }

    /// What a job's merged message hands the driver: a summary starts the
    /// training ([`Message::start`]; no rows to train on is a reason to
    /// train on one node, which reports it), sums go as they are.
    pub fn conclude(self, params: &CheckedParams) -> Result<Message> {
        match self {
            Message::Summary(summary) => match Message::start(params, summary) {
                Err(ArborError::NothingToTrain(reason)) => Ok(Message::OneNode(reason)),
                started => started,
            },
            sums @ Message::Sums(_) => Ok(sums),
            other => Err(ArborError::Data(format!("a job's pieces passed on a {}", other.kind()))),
        }
    }

    /// Bytes held on the heap, for a memory pool's accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            Message::Summary(summary) => summary.heap_size(),
            Message::Sums(sums) => sums.heap_size(),
            Message::Grow(_) | Message::OneNode(_) => 0,
        }
    }

    /// What the message is, for errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Summary(_) => "summary",
            Message::Sums(_) => "level's sums",
            Message::Grow(_) => "training state",
            Message::OneNode(_) => "reason to train on one node",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_corrupt_bytes_are_errors() {
        let reason = Message::OneNode("the label holds a single class".into());
        match Message::from_bytes(&reason.to_bytes()).unwrap() {
            Message::OneNode(text) => assert_eq!(text, "the label holds a single class"),
            other => panic!("read back a {}", other.kind()),
        }
        let summary = Message::Summary(LevelSummary::null_labels(7));
        assert!(matches!(Message::from_bytes(&summary.to_bytes()).unwrap(), Message::Summary(_)));
        assert!(Message::from_bytes(&[]).unwrap_err().to_string().contains("empty"));
        assert!(Message::from_bytes(&[9, 1, 2]).unwrap_err().to_string().contains("unknown tag 9"));
        assert!(Message::from_bytes(&[GROW, 1, 2]).is_err());
        let mut merged = Message::Summary(LevelSummary::null_labels(1));
        let error = merged.merge(Message::OneNode("no".into())).unwrap_err().to_string();
        assert!(error.contains("summary with a reason"), "{error}");
    }
}
