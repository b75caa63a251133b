//! Deserializing YAML with the key path of any error (`evaluators[2].stages[0]`),
//! because serde's own messages say what is wrong but not where.

use serde::de::DeserializeOwned;

/// Parses `text` into `T`; the error carries the key path when there is one.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(describe)
}

/// Converts an already-parsed YAML value into `T`, with the key path.
pub fn from_value<T: DeserializeOwned>(value: serde_yaml::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

fn describe<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    if path == "." {
        e.inner().to_string()
    } else {
        format!("at `{path}`: {}", e.inner())
    }
}
