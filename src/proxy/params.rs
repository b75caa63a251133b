//! The `params.before` event every model API has: the model, and every
//! request key but the conversation itself (system prompt, tool
//! definitions, sampling parameters), plus the new turn's items that are
//! neither user text nor tool results (system/developer messages, Codex's
//! `additional_tools`) under the conversation's own key; and writing a
//! redacted one back.

use serde_json::{json, Map, Value};

/// `list` is the conversation's key (`messages`, `input`); `new_items` the
/// indexes in it of the new turn's other items.
pub fn event(body: &Value, list: &str, new_items: &[usize]) -> Value {
    let mut params = Map::new();
    if let Value::Object(o) = body {
        for (k, v) in o {
            if k != list && k != "model" && k != "stream" {
                params.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Array(items)) = body.get(list) {
        if !new_items.is_empty() {
            params.insert(
                list.into(),
                Value::Array(
                    new_items
                        .iter()
                        .filter_map(|&i| items.get(i).cloned())
                        .collect(),
                ),
            );
        }
    }
    let mut event = json!({"stage": "params.before", "params": Value::Object(params)});
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        event["model"] = Value::String(model.to_string());
    }
    event
}

/// Writes the redacted `params` of [`event`] back into `body`: each key
/// over the body's, and the items under `list` over the ones they came
/// from.
pub fn write_back(body: &mut Value, redacted: &Value, list: &str, new_items: &[usize]) {
    let Some(Value::Object(params)) = redacted.get("params") else {
        return;
    };
    for (k, v) in params {
        if k == list {
            for (n, &i) in new_items.iter().enumerate() {
                if let (Some(new), Some(slot)) =
                    (v.get(n), body.get_mut(list).and_then(|m| m.get_mut(i)))
                {
                    *slot = new.clone();
                }
            }
        } else if let Some(o) = body.as_object_mut() {
            o.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameters_and_the_new_turns_other_items_round_trip() {
        let mut body = json!({"model": "m", "stream": true, "system": "sys AKIA",
                              "messages": [{"role": "user"}, {"role": "system", "content": "x"}]});
        let e = event(&body, "messages", &[1]);
        assert_eq!(e["model"], "m");
        assert!(e["params"].get("stream").is_none());
        assert_eq!(
            e["params"]["messages"],
            json!([{"role": "system", "content": "x"}])
        );
        let redacted = json!({"params": {"system": "sys [REDACTED]",
                                          "messages": [{"role": "system", "content": "y"}]}});
        write_back(&mut body, &redacted, "messages", &[1]);
        assert_eq!(body["system"], "sys [REDACTED]");
        assert_eq!(body["messages"][1]["content"], "y");
        assert_eq!(body["messages"][0], json!({"role": "user"}));
    }
}
