//! `arbor sql` on a terminal: an interactive shell with a prompt, line
//! editing and history, as datafusion-cli, duckdb and psql have.

use std::io::Write;
use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use super::SqlSession;
use crate::CliError;

/// Where the shell keeps its history between runs.
fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".arbor_history"))
}

/// Whether `text` ends a statement: its last non-blank character is `;`.
fn complete(text: &str) -> bool {
    text.trim_end().ends_with(';')
}

/// Reads statements line by line until `\q`, `quit`, `exit` or end of input,
/// running each one in `session` as soon as a line ends it with `;`. A failed
/// statement prints its error and the shell goes on; Ctrl-C drops the
/// statement being typed.
pub fn repl(session: &SqlSession, runtime: &tokio::runtime::Runtime, out: &mut dyn Write) -> Result<(), CliError> {
    let mut editor = DefaultEditor::new().map_err(|e| CliError::Usage(format!("no line editor: {e}")))?;
    let history = history_path();
    if let Some(path) = &history {
        // No history yet is the usual first run, not an error.
        let _ = editor.load_history(path);
    }
    eprintln!("arbor SQL shell: statements end with ';', \\q quits.");
    let mut statement = String::new();
    loop {
        let prompt = if statement.is_empty() { "arbor> " } else { "  ...> " };
        match editor.readline(prompt) {
            Ok(line) => {
                if statement.is_empty() && matches!(line.trim(), "\\q" | "quit" | "exit") {
                    break;
                }
                if statement.is_empty() && line.trim().is_empty() {
                    continue;
                }
                statement.push_str(&line);
                statement.push('\n');
                if !complete(&statement) {
                    continue;
                }
                let _ = editor.add_history_entry(statement.trim());
                match runtime.block_on(session.run(&statement, out)) {
                    Ok(_) => {}
                    Err(e) if e.is_broken_pipe() => return Err(e),
                    Err(e) => eprintln!("error: {e}"),
                }
                statement.clear();
            }
            Err(ReadlineError::Interrupted) => statement.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::Usage(format!("reading a line: {e}"))),
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::complete;

    #[test]
    fn a_statement_ends_at_a_trailing_semicolon() {
        assert!(complete("SELECT 1;"));
        assert!(complete("SELECT 1;  \n"));
        assert!(!complete("SELECT 1"));
        assert!(!complete("SELECT ';' AS x\n"));
    }
}
