//! The settings the binary runs with: the front doors' sections parsed
//! ([`sections`]) and the checks serde alone cannot make ([`checks`]).

pub mod checks;
pub mod sections;

pub use sections::{
    ApprovalsSettings, ApprovalsSlackSettings, BudgetLimit, BudgetsSettings, FsyncPolicy,
    McpSettings, ModelPrice, NamedUpstream, OnFull, OtherPaths, OtlpProtocol, OtlpSettings,
    PagerDutySettings, PoisonedTools, PostgresSettings, Prebuild, ProxySettings, ReloadSettings,
    ReportingSettings, ServerSettings, Settings, StoreSettings, TelemetrySettings, TenantAuth,
    UpstreamApi, UpstreamAuth, WebhookFormat,
};

use parallax_runtime::ProgramSettings;

/// The settings `program` carries, parsed and checked: the first kind of
/// problem found (a section that does not parse, else the checks), every
/// instance of it, one message each, naming the key.
pub fn read(program: &ProgramSettings) -> Result<Settings, Vec<String>> {
    let settings = Settings::from_program(program)?;
    let problems = checks::problems(&settings);
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(problems)
    }
}
