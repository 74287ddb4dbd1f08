//! The `arbor` command line: train, predict, inspect, SQL and import over Parquet.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use arbor::commands::{self, ImportFormat, InspectFormat, OutputFormat, PredictArgs, SqlSession, TrainArgs};
use arbor::{CliError, MemoryUse};
use clap::{Parser, Subcommand, ValueEnum};

/// Decision forests on Apache Arrow: train and serve random forests from Parquet and SQL.
#[derive(Parser)]
#[command(name = "arbor", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Task {
    Classification,
    Regression,
}

#[derive(Clone, Copy, ValueEnum)]
enum Algorithm {
    RandomForest,
    GradientBoosting,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Foreign {
    XgboostJson,
    LightgbmText,
}

/// A format `arbor export` writes.
#[derive(Clone, Copy, ValueEnum)]
enum ExportTo {
    XgboostJson,
    LightgbmText,
    Onnx,
}

impl ExportTo {
    /// The same format, as arbor's export names it.
    fn format(self) -> arbor_ensemble::ExportFormat {
        match self {
            ExportTo::XgboostJson => arbor_ensemble::ExportFormat::XgboostJson,
            ExportTo::LightgbmText => arbor_ensemble::ExportFormat::LightgbmText,
            ExportTo::Onnx => arbor_ensemble::ExportFormat::Onnx,
        }
    }
}

/// `arbor train`'s flags.
#[derive(clap::Args)]
struct TrainFlags {
    /// Training data: a Parquet file, or a directory of Parquet files of one schema.
    #[arg(long)]
    input: PathBuf,
    /// The label column.
    #[arg(long)]
    label: String,
    /// Where to write the model.
    #[arg(long)]
    output: PathBuf,
    /// Default: classification for integer, boolean or string labels, regression for floats.
    #[arg(long, value_enum)]
    task: Option<Task>,
    /// The ensemble to train.
    #[arg(long, value_enum)]
    algorithm: Option<Algorithm>,
    /// Feature columns, comma separated (default: every column but the label, weight and group).
    #[arg(long, value_delimiter = ',')]
    features: Option<Vec<String>>,
    /// A column of sample weights.
    #[arg(long)]
    weight: Option<String>,
    /// A column of query ids (integers) to rank within: learning to rank,
    /// gradient boosting with loss=lambdarank unless --set says otherwise.
    #[arg(long, value_name = "COL")]
    group: Option<String>,
    /// A training option KEY=VALUE (repeatable), e.g. --set n_trees=200.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Random forests: write each training row's out-of-bag prediction and error here (Parquet).
    #[arg(long, value_name = "FILE")]
    oob_output: Option<PathBuf>,
    /// The memory training may use, e.g. 2GB or 512MiB (default: the
    /// machine's, or its cgroup's): a request past it is an error that
    /// names the figure, not an out-of-memory kill.
    #[arg(long, value_name = "SIZE", value_parser = arbor::parse_size)]
    memory_limit: Option<u64>,
    /// Continue boosting from this model: its rounds come first, then
    /// `n_rounds` more, on its bins, features, classes and loss.
    #[arg(long, value_name = "MODEL.arbor")]
    init_model: Option<PathBuf>,
}

impl TrainFlags {
    /// The flags as the train command takes them.
    fn into_args(self) -> TrainArgs {
        let task = self.task.map(|t| match t {
            Task::Classification => "classification".into(),
            Task::Regression => "regression".into(),
        });
        let algorithm = self.algorithm.map(|a| match a {
            Algorithm::RandomForest => "random-forest".into(),
            Algorithm::GradientBoosting => "gradient-boosting".into(),
        });
        TrainArgs {
            task,
            algorithm,
            input: self.input,
            label: self.label,
            output: self.output,
            features: self.features,
            weight: self.weight,
            group: self.group,
            set: self.set,
            oob_output: self.oob_output,
            memory_limit: self.memory_limit,
            init_model: self.init_model,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Train a model on a Parquet file.
    Train(TrainFlags),
    /// Score a Parquet file with a model.
    Predict {
        /// The model file.
        #[arg(long)]
        model: PathBuf,
        /// Rows to score (Parquet).
        #[arg(long)]
        input: PathBuf,
        /// Output: the input's columns plus `prediction` (Parquet).
        #[arg(long)]
        output: PathBuf,
        /// Also write one `proba_<class>` column per class.
        #[arg(long)]
        proba: bool,
        /// Also write each feature's SHAP contribution to the raw score
        /// (`contrib_<feature>`, `contrib_bias`; per class for more than two).
        #[arg(long)]
        contributions: bool,
    },
    /// Describe a model: task, classes, features and importance, trees, parameters; or draw one tree.
    Inspect {
        /// The model file.
        #[arg(long)]
        model: PathBuf,
        /// Print one JSON object.
        #[arg(long, conflicts_with = "dot")]
        json: bool,
        /// Print tree N (from 0) as Graphviz DOT, e.g. `| dot -Tsvg > tree.svg`.
        #[arg(long, value_name = "N")]
        dot: Option<usize>,
    },
    /// Run SQL in an embedded DataFusion session with arbor's functions.
    Sql {
        /// A file of SQL statements (none: standard input, or an interactive
        /// shell on a terminal).
        #[arg(conflicts_with = "command")]
        file: Option<PathBuf>,
        /// SQL statements given inline.
        #[arg(long, short = 'c')]
        command: Option<String>,
        /// How query results are printed.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Run on the Ballista cluster whose scheduler listens here
        /// (`df://HOST:PORT`, see `arbor cluster`) instead of in process.
        #[arg(long, value_name = "df://HOST:PORT")]
        cluster: Option<String>,
    },
    /// Start a process of a Ballista cluster that knows arbor's functions.
    Cluster {
        #[command(subcommand)]
        role: ClusterRole,
    },
    /// Convert an XGBoost (JSON) or LightGBM (text) model into an arbor model.
    Import {
        /// The foreign model's format.
        #[arg(long, value_enum)]
        format: Foreign,
        /// The foreign model file.
        #[arg(long)]
        input: PathBuf,
        /// Where to write the arbor model.
        #[arg(long)]
        output: PathBuf,
    },
    /// Write a model's report: one self-contained HTML page of its summary,
    /// importance, first tree and, with --data, its metrics, SHAP summary
    /// and partial dependence on those rows.
    Report {
        /// The arbor model file.
        #[arg(long)]
        model: PathBuf,
        /// Rows to measure the model on: a Parquet file with its features
        /// (and its label, for the metrics).
        #[arg(long)]
        data: Option<PathBuf>,
        /// Where to write the HTML page.
        #[arg(long)]
        output: PathBuf,
    },
    /// Write an arbor model as an XGBoost (JSON), LightGBM (text) or ONNX
    /// model, for the servers that load those (onnxruntime, treelite, Triton FIL).
    Export {
        /// The format to write.
        #[arg(long, value_enum)]
        format: ExportTo,
        /// The arbor model file.
        #[arg(long)]
        model: PathBuf,
        /// Where to write the exported model.
        #[arg(long)]
        output: PathBuf,
    },
}

/// The processes of a cluster; each takes Ballista's own flags.
#[derive(Subcommand)]
enum ClusterRole {
    /// A scheduler: plans queries and hands their tasks to executors.
    /// Flags: Ballista's scheduler flags (`--bind-host`, `--bind-port`, ...; see `--help`).
    #[command(disable_help_flag = true)]
    Scheduler {
        /// Ballista's scheduler flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        flags: Vec<String>,
    },
    /// An executor: runs tasks, training and scoring included.
    /// Flags: Ballista's executor flags (`--scheduler-host`, `--scheduler-port`,
    /// `--bind-port`, `--bind-grpc-port`, `--work-dir`, `--vcores`, ...; see `--help`),
    /// and arbor's `--shard-memory SIZE`: the memory the executor keeps
    /// level-wise training's binned partitions in between level jobs
    /// (default a quarter of its memory; 0 keeps none).
    #[command(disable_help_flag = true)]
    Executor {
        /// Ballista's executor flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        flags: Vec<String>,
    },
}

/// The value of flag `name` (`NAME VALUE` or `NAME=VALUE`), taken out of
/// `flags` so that the rest pass to Ballista as they are.
#[cfg(feature = "cluster")]
fn take_flag(flags: &mut Vec<String>, name: &str) -> Result<Option<String>, CliError> {
    let Some(at) = flags.iter().position(|f| f == name || f.starts_with(&format!("{name}="))) else {
        return Ok(None);
    };
    let flag = flags.remove(at);
    match flag.split_once('=') {
        Some((_, value)) => Ok(Some(value.to_owned())),
        None if at < flags.len() => Ok(Some(flags.remove(at))),
        None => Err(CliError::Usage(format!("{name} needs a size, e.g. {name} 2GB"))),
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    // A mistyped or unsupported ARBOR_SIMD is an error, not a silent fallback.
    arbor_kernels::dispatch::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
    // Locked only where a command writes results: a cluster process logs to
    // standard output from its runtime's threads, which would wait forever
    // on a lock held here.
    let stdout = || std::io::stdout().lock();
    let io = |e| CliError::Io { path: "<stdout>".into(), source: e };
    match cli.command {
        Command::Train(flags) => {
            let report = commands::train(&flags.into_args())?;
            eprintln!("{report}");
        }
        Command::Predict { model, input, output, proba, contributions } => {
            let report = commands::predict(&PredictArgs { model, input, output, proba, contributions })?;
            eprintln!("{report}");
        }
        Command::Inspect { model, json, dot } => {
            let format = match (json, dot) {
                (_, Some(tree)) => InspectFormat::Dot(tree),
                (true, None) => InspectFormat::Json,
                (false, None) => InspectFormat::Text,
            };
            write!(stdout(), "{}", commands::inspect(&model, format)?).map_err(io)?;
        }
        #[cfg(not(feature = "cluster"))]
        Command::Cluster { .. } => return Err(CliError::Usage(commands::WITHOUT_CLUSTER.into())),
        #[cfg(feature = "cluster")]
        Command::Cluster { role } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_stack_size(32 << 20)
                .build()
                .map_err(io)?;
            let served = match role {
                ClusterRole::Scheduler { flags } => runtime.block_on(arbor_ballista::run_scheduler(
                    std::iter::once("arbor cluster scheduler".into()).chain(flags),
                )),
                ClusterRole::Executor { mut flags } => {
                    if let Some(size) = take_flag(&mut flags, "--shard-memory")? {
                        let bytes = match size.trim() {
                            "0" => 0,
                            size => {
                                arbor::parse_size(size).map_err(|e| CliError::Usage(format!("--shard-memory: {e}")))?
                            }
                        };
                        arbor_datafusion::shard_store().set_budget(usize::try_from(bytes).unwrap_or(usize::MAX));
                    }
                    runtime.block_on(arbor_ballista::run_executor(
                        std::iter::once("arbor cluster executor".into()).chain(flags),
                    ))
                }
            };
            served.map_err(|e| CliError::Usage(e.to_string()))?;
        }
        Command::Sql { file, command, format, cluster } => {
            let format = match format {
                Format::Table => OutputFormat::Table,
                Format::Csv => OutputFormat::Csv,
                Format::Json => OutputFormat::Json,
            };
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(io)?;
            let sql = match (file, command) {
                (Some(path), _) => std::fs::read_to_string(&path).map_err(CliError::io(path))?,
                (None, Some(sql)) => sql,
                (None, None) if std::io::stdin().is_terminal() => {
                    let session = match &cluster {
                        Some(url) => runtime.block_on(SqlSession::cluster(url, format))?,
                        None => SqlSession::new(format),
                    };
                    return commands::repl(&session, &runtime, &mut stdout());
                }
                (None, None) => std::io::read_to_string(std::io::stdin()).map_err(CliError::io("<stdin>"))?,
            };
            runtime.block_on(commands::run_sql(&sql, cluster.as_deref(), format, &mut stdout()))?;
        }
        Command::Import { format, input, output } => {
            let format = match format {
                Foreign::XgboostJson => ImportFormat::XgboostJson,
                Foreign::LightgbmText => ImportFormat::LightgbmText,
            };
            eprintln!("{}", commands::import(format, &input, &output)?);
        }
        Command::Report { model, data, output } => {
            eprintln!("{}", commands::report(&model, data.as_deref(), &output)?);
        }
        Command::Export { format, model, output } => {
            eprintln!("{}", commands::export(format.format(), &model, &output)?);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A cluster executor runs task after task and keeps its freed buffers for the next.
    let executor = matches!(&cli.command, Command::Cluster { role: ClusterRole::Executor { .. } });
    arbor::fix_malloc_thresholds(if executor { MemoryUse::Executor } else { MemoryUse::OneJob });
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped reading (`| head`) is not a failure.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
