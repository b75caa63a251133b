//! Every shipped SQL rule seeks the window through an index: none scans the
//! whole store (100,000 rows by default) on every event.

use parallax::backend::baked;

#[test]
fn shipped_sql_rules_never_scan_the_whole_store() {
    let engine = baked::engine().expect("baked engine");
    let program = engine.program();
    assert!(
        !program.sql.is_empty(),
        "the shipped rules include SQL rules"
    );
    for spec in &program.sql {
        let id = &program.rules[spec.rule as usize].id;
        let plan = parallax_store::query_plan(&spec.query).expect("plan");
        println!("{id}:\n  {}", plan.join("\n  "));
        for step in &plan {
            assert!(
                !(step.starts_with("SCAN events") || step.contains("SCAN events USING")),
                "rule `{id}` scans the whole window: {step}\nplan: {plan:#?}"
            );
        }
        // The lockout seeks the partial index of blocks (docs/SQL.md "The
        // schema"): its `action = 'block'` must stay spelt so for SQLite
        // to use it, or it walks the session's whole window row by row.
        if spec.query.contains("action = 'block'") {
            assert!(
                plan.iter().any(|s| s.contains(
                    "SEARCH events USING INDEX events_session_blocks (session_id=? AND ts>?)"
                )),
                "rule `{id}` does not seek the blocks index: {plan:#?}"
            );
        }
    }
}
