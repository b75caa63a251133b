//! Shape limits on an event body: nesting depth and string length.
//!
//! serde_json already refuses nesting past 128 levels (its recursion
//! guard); these limits are the operator's, lower and explicit, so that a
//! client gets `400` with the reason instead of the engine scanning a
//! multi-megabyte string or walking a pathological tree.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("the event nests deeper than server.max_json_depth ({0} levels)")]
    TooDeep(usize),
    #[error("a string at {path} is {len} bytes, more than server.max_string_bytes ({max})")]
    StringTooLong {
        path: String,
        len: usize,
        max: usize,
    },
}

/// Checks `v` against the limits; the error names where it broke them.
pub fn check(v: &Value, max_depth: usize, max_string: usize) -> Result<(), LimitError> {
    walk(v, 1, max_depth, max_string, &mut String::from("$"))
}

fn walk(
    v: &Value,
    depth: usize,
    max_depth: usize,
    max_string: usize,
    path: &mut String,
) -> Result<(), LimitError> {
    let long = |len: usize, path: &str| LimitError::StringTooLong {
        path: path.to_string(),
        len,
        max: max_string,
    };
    match v {
        Value::String(s) if s.len() > max_string => Err(long(s.len(), path)),
        Value::Array(_) | Value::Object(_) if depth > max_depth => {
            Err(LimitError::TooDeep(max_depth))
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, depth + 1, max_depth, max_string, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(&k.chars().take(64).collect::<String>());
                if k.len() > max_string {
                    return Err(long(k.len(), path));
                }
                walk(item, depth + 1, max_depth, max_string, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_and_length_are_enforced_with_the_place() {
        let v = json!({"a": {"b": [1]}});
        assert_eq!(check(&v, 3, 10), Ok(()));
        assert_eq!(check(&v, 2, 10), Err(LimitError::TooDeep(2)));
        let v = json!({"a": {"cmd": ["ok", "toolong"]}});
        let e = check(&v, 10, 5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a string at $.a.cmd[1] is 7 bytes, more than server.max_string_bytes (5)"
        );
    }
}
