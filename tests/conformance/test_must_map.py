"""KIT-10: the MUST clauses a store or runner can violate, each with the kit checks that cover it.

``MUST_MAP`` lists every MUST clause of docs/spec.md that binds a pluggable store (the store protocol) or
runner (the runner protocol of CONF-4), with the checks of :class:`conformance.StoreConformance` and
:class:`conformance.RunnerConformance` that cite it; ``()`` for a clause the kit cannot check through those
APIs, whose text in the spec then says why after ``_Kit:_``. ``NOT_BACKEND`` names the clauses that bind the
repository's own tools and built-in stores instead (KIT-10 says which and why). A MUST clause added to the
spec fails :func:`test_every_must_clause_is_mapped` until it is listed in one of the two.
"""

from __future__ import annotations

import re

from conformance.marks import CLAUSES_ATTR
from conformance.runner_calls import RunnerConformance
from conformance.store_suite import StoreConformance
from tests.conformance.test_clause_coverage import SPEC, clauses

#: Prefixes and ids of clauses that bind the repository's tools and built-in stores, not a backend (KIT-10).
NOT_BACKEND = frozenset(
    {"PLG", "CLI", "INS", "KIT", "CONF", "DOC", "API", "SER", "WIRE", "KSTORE", "COST", "FA", "TOOL", "COV"}
    | {"FAIL-2", "FAIL-3", "FAIL-4", "FAIL-5", "CFG-1", "CFG-2", "CFG-5"}
    | {"STORE-10", "STORE-11", "STORE-17", "STORE-18", "STORE-19", "STORE-20", "STORE-21"}
)

#: Every MUST clause a store or runner can violate -> the kit checks citing it ("Suite.check"); () when the
#: spec says why the kit cannot check it.
MUST_MAP: dict[str, tuple[str, ...]] = {
    "IDN-1": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "IDN-2": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "IDN-3": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "IDN-4": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "IDN-5": ("RunnerConformance.test_idempotency_call_id_is_the_same_in_every_attempt",),
    "IDN-6": (
        "RunnerConformance.test_a_crash_between_attempts_restarts_them",
        "RunnerConformance.test_idempotency_call_id_is_the_same_in_every_attempt",
    ),
    "IDN-7": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "IDN-8": ("RunnerConformance.test_call_identity_is_computed_as_specified",),
    "DE-1": ("RunnerConformance.test_crash_between_effect_and_record_executes_at_most_once_more",),
    "DE-2": ("RunnerConformance.test_crash_after_record_replays_by_call_order",),
    "DE-3": (
        "RunnerConformance.test_async_pending_call_is_reconciled",
        "RunnerConformance.test_pending_call_is_reconciled_not_re_executed",
    ),
    "DE-4": ("RunnerConformance.test_reconciled_outcome_is_persisted",),
    "DE-5": (
        "RunnerConformance.test_a_reconciler_that_raises_records_the_failure",
        "RunnerConformance.test_async_pending_call_is_reconciled",
        "RunnerConformance.test_pending_batch_slots_are_reconciled",
        "RunnerConformance.test_pending_call_is_reconciled_not_re_executed",
        "RunnerConformance.test_reconciled_outcome_is_persisted",
    ),
    "DE-6": ("RunnerConformance.test_partial_batch_recovery_reruns_only_unfinished_slots",),
    "DE-7": ("RunnerConformance.test_lenient_mode_truncates_at_a_changed_call_and_executes",),
    "DE-8": ("RunnerConformance.test_strict_mode_raises_on_a_changed_call_and_changes_no_record",),
    "DE-9": ("RunnerConformance.test_a_recorded_exception_replays_as_itself",),
    "DE-10": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "DE-11": ("RunnerConformance.test_context_misuse_inside_a_synchronous_durable_function_raises",),
    "DE-12": ("RunnerConformance.test_an_async_call_starts_only_when_awaited",),
    "DE-14": ("RunnerConformance.test_reconcilers_switched_off_by_config",),
    "DE-15": ("RunnerConformance.test_a_synchronous_call_runs_on_the_action_thread",),
    "DE-16": ("RunnerConformance.test_fault_points_follow_each_call_plan",),
    "DE-17": ("RunnerConformance.test_sync_and_async_calls_leave_the_same_trail",),
    "DE-18": (
        "RunnerConformance.test_retry_policies_on_the_asynchronous_paths",
        "RunnerConformance.test_retry_policies_on_the_synchronous_path",
    ),
    "DE-19": (),
    "PAY-1": ("RunnerConformance.test_a_recorded_exception_replays_as_itself",),
    "PAY-2": (),
    "PAY-3": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "PAY-4": (),
    "PAY-5": (),
    "PAY-6": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "PAY-7": ("RunnerConformance.test_a_value_no_store_can_hold_is_refused_first",),
    "PAY-8": ("RunnerConformance.test_a_bad_option_is_refused_before_anything_runs",),
    "LIM-1": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-2": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-3": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-4": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-5": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-6": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-7": ("RunnerConformance.test_a_tampered_record_is_refused_where_it_lies",),
    "LIM-8": (),
    "SIG-1": (),
    "SIG-2": (),
    "SIG-3": (),
    "MEM-1": ("RunnerConformance.test_the_memory_api",),
    "MEM-2": ("RunnerConformance.test_the_memory_api",),
    "MEM-3": ("RunnerConformance.test_the_memory_api",),
    "MEM-4": (),
    "MEM-5": ("RunnerConformance.test_the_memory_api",),
    "MEM-6": ("RunnerConformance.test_the_memory_api",),
    "MEM-7": ("RunnerConformance.test_sequence_numbers_and_outputs_per_key",),
    "MEM-8": ("RunnerConformance.test_sensory_memory_is_empty_at_the_start_of_every_run",),
    "MEM-9": ("RunnerConformance.test_memory_after_any_crash_equals_the_crash_free_memory",),
    "MEM-10": ("RunnerConformance.test_memory_after_any_crash_equals_the_crash_free_memory",),
    "MEM-11": (
        "RunnerConformance.test_actions_stay_on_the_runner_thread",
        "RunnerConformance.test_context_misuse_inside_a_synchronous_durable_function_raises",
    ),
    "MEM-13": ("RunnerConformance.test_short_term_memory_reaches_later_actions",),
    "STORE-1": (
        "StoreConformance.test_a_state_put_twice_is_replaced_whole",
        "StoreConformance.test_exception_payloads_are_bytes_not_text",
        "StoreConformance.test_hundreds_of_call_records",
        "StoreConformance.test_large_state_round_trips",
        "StoreConformance.test_memory_values_near_the_size_limit",
        "StoreConformance.test_put_get_round_trip",
        "StoreConformance.test_second_put_replaces_memory_and_outputs",
        "StoreConformance.test_store_matches_reference_model",
        "StoreConformance.test_values_round_trip_at_full_fidelity",
    ),
    "STORE-2": (
        "StoreConformance.test_awkward_business_keys_stay_apart",
        "StoreConformance.test_business_keys_holding_the_state_key_separator",
        "StoreConformance.test_keys_and_actions_are_isolated",
    ),
    "STORE-3": (
        "StoreConformance.test_a_miss_still_hides_after_restart",
        "StoreConformance.test_business_keys_holding_the_state_key_separator",
        "StoreConformance.test_miss_hides_later_sequence_numbers",
        "StoreConformance.test_miss_past_nine_compares_numerically",
        "StoreConformance.test_store_matches_reference_model",
    ),
    "STORE-4": (
        "StoreConformance.test_awkward_business_keys_stay_apart",
        "StoreConformance.test_business_keys_holding_the_state_key_separator",
        "StoreConformance.test_prune_after_a_marker_holds_after_restart",
        "StoreConformance.test_prune_boundaries",
        "StoreConformance.test_pruned_then_put_again_survives_restart",
        "StoreConformance.test_store_matches_reference_model",
    ),
    "STORE-5": (
        "StoreConformance.test_call_results_finalize_in_place_append_and_truncate",
        "StoreConformance.test_concurrent_writers_on_distinct_keys",
        "StoreConformance.test_exception_payloads_are_bytes_not_text",
        "StoreConformance.test_hundreds_of_call_records",
        "StoreConformance.test_many_deltas_keep_their_order",
        "StoreConformance.test_store_matches_reference_model",
    ),
    "STORE-6": (
        "StoreConformance.test_a_miss_still_hides_after_restart",
        "StoreConformance.test_markers_taken_several_times",
        "StoreConformance.test_prune_after_a_marker_holds_after_restart",
        "StoreConformance.test_pruned_then_put_again_survives_restart",
        "StoreConformance.test_read_then_marker_then_write_survives_restart",
        "StoreConformance.test_rebuild_after_restart",
    ),
    "STORE-7": (
        "StoreConformance.test_truncation_survives_restart",
        "StoreConformance.test_write_killed_midway_is_whole_or_absent",
    ),
    "STORE-8": (
        "StoreConformance.test_a_state_put_twice_is_replaced_whole",
        "StoreConformance.test_completed_state_replays_without_call_results",
    ),
    "STORE-9": (),
    "STORE-15": ("StoreConformance.test_store_keeps_its_own_copy",),
    "STORE-16": ("StoreConformance.test_writes_are_visible_across_threads",),
    "RUN-1": (
        "RunnerConformance.test_idempotency_call_id_is_the_same_in_every_attempt",
        "RunnerConformance.test_sequence_numbers_and_outputs_per_key",
    ),
    "RUN-2": ("RunnerConformance.test_actions_run_in_declaration_order",),
    "RUN-3": ("RunnerConformance.test_sensory_memory_is_empty_at_the_start_of_every_run",),
    "RUN-4": ("RunnerConformance.test_sequence_numbers_and_outputs_per_key",),
    "RUN-5": ("RunnerConformance.test_other_keys_progress_while_an_action_awaits",),
    "RUN-6": ("RunnerConformance.test_actions_stay_on_the_runner_thread",),
    "RUN-7": ("RunnerConformance.test_completed_states_are_pruned_only_after_a_checkpoint",),
    "RUN-8": ("RunnerConformance.test_completed_states_are_pruned_only_after_a_checkpoint",),
    "RUN-9": ("RunnerConformance.test_action_failure_names_its_action_after_other_keys_finish",),
    "RUN-10": ("RunnerConformance.test_action_failure_names_its_action_after_other_keys_finish",),
    "RUN-17": ("RunnerConformance.test_the_async_pool_caps_a_batch",),
    "CFG-3": ("RunnerConformance.test_a_bad_option_is_refused_before_anything_runs",),
    "CFG-4": ("RunnerConformance.test_a_misspelt_config_key_warns",),
    "REC-1": ("RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",),
    "REC-2": (
        "RunnerConformance.test_async_calls_replay_by_call_order",
        "RunnerConformance.test_crash_after_record_replays_by_call_order",
    ),
    "REC-3": (
        "RunnerConformance.test_async_calls_replay_by_call_order",
        "RunnerConformance.test_crash_after_record_replays_by_call_order",
        "RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",
    ),
    "REC-4": ("RunnerConformance.test_completed_action_is_skipped_and_its_outputs_not_emitted_twice",),
    "REC-5": (
        "RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",
        "RunnerConformance.test_crash_between_effect_and_record_executes_at_most_once_more",
        "RunnerConformance.test_pending_call_is_reconciled_not_re_executed",
    ),
    "REC-6": (
        "RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",
        "RunnerConformance.test_memory_after_any_crash_equals_the_crash_free_memory",
    ),
    "REC-7": (
        "RunnerConformance.test_idempotency_call_id_is_the_same_in_every_attempt",
        "RunnerConformance.test_reconciled_outcome_is_persisted",
    ),
    "FLT-1": (
        "RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",
        "RunnerConformance.test_fault_points_follow_each_call_plan",
    ),
    "FLT-2": ("RunnerConformance.test_fault_points_follow_each_call_plan",),
    "FLT-3": ("RunnerConformance.test_user_code_cannot_swallow_a_crash",),
    "FLT-4": ("RunnerConformance.test_crash_at_every_fault_point_recovers_to_the_crash_free_run",),
    "FLT-5": ("RunnerConformance.test_idempotency_call_id_is_the_same_in_every_attempt",),
    "KEY-1": ("RunnerConformance.test_state_keys",),
    "KEY-2": ("RunnerConformance.test_state_keys",),
    "KEY-3": (),
    "IDN-9": ("RunnerConformance.test_each_execution_of_an_action_has_call_ids_of_its_own",),
    "IDN-10": ("RunnerConformance.test_equal_arguments_rebuilt_by_recovery_hit_their_record",),
    "FLT-6": ("RunnerConformance.test_every_execution_of_an_action_is_its_own_fault_point",),
    "FAIL-1": ("RunnerConformance.test_a_failing_store_stops_the_run_at_once",),
    "BAT-1": ("RunnerConformance.test_batch_runs_exactly_parallelism_calls_and_finalizes_by_index",),
    "BAT-2": ("RunnerConformance.test_batch_reserves_every_slot_in_one_persist_before_work",),
    "BAT-3": ("RunnerConformance.test_batch_runs_exactly_parallelism_calls_and_finalizes_by_index",),
    "BAT-4": (
        "RunnerConformance.test_batch_runs_exactly_parallelism_calls_and_finalizes_by_index",
        "RunnerConformance.test_partial_batch_recovery_reruns_only_unfinished_slots",
    ),
    "BAT-5": (
        "RunnerConformance.test_partial_batch_recovery_reruns_only_unfinished_slots",
        "RunnerConformance.test_pending_batch_slots_are_reconciled",
    ),
    "BAT-6": ("RunnerConformance.test_a_batch_deadline_fails_late_calls_and_keeps_unstarted_ones_pending",),
    "BAT-7": ("RunnerConformance.test_retry_policies_on_the_asynchronous_paths",),
    "BAT-8": ("RunnerConformance.test_a_batch_deadline_fails_late_calls_and_keeps_unstarted_ones_pending",),
    "RETRY-1": (
        "RunnerConformance.test_retry_policies_on_the_asynchronous_paths",
        "RunnerConformance.test_retry_policies_on_the_synchronous_path",
    ),
    "RETRY-2": ("RunnerConformance.test_retry_policies_on_the_synchronous_path",),
    "RETRY-3": (),
    "RETRY-4": ("RunnerConformance.test_retry_policies_on_the_synchronous_path",),
    "RETRY-5": ("RunnerConformance.test_a_crash_between_attempts_restarts_them",),
    "RETRY-6": (),
    "RETRY-7": ("RunnerConformance.test_retry_policies_on_the_synchronous_path",),
    "TPC-1": ("RunnerConformance.test_two_phase_commit_under_a_crash",),
    "TPC-2": ("RunnerConformance.test_two_phase_commit_under_a_crash",),
    "TPC-3": ("RunnerConformance.test_two_phase_commit_failures",),
    "TPC-4": ("RunnerConformance.test_two_phase_commit_under_a_crash",),
    "TPC-5": ("RunnerConformance.test_two_phase_commit_under_a_crash",),
    "TPC-6": ("RunnerConformance.test_two_phase_commit_failures",),
    "TPC-7": ("RunnerConformance.test_two_phase_commit_options",),
    "TPC-8": ("RunnerConformance.test_two_phase_commit_failures",),
    "EVT-1": ("StoreConformance.test_output_events_keep_their_class_and_fields",),
    "EVT-2": ("StoreConformance.test_an_event_whose_class_is_gone_fails_with_its_location",),
    "EVT-3": (),
    "EVT-4": (),
    "LIM-9": ("StoreConformance.test_what_is_acknowledged_is_read_back_under_the_limits",),
    "LIM-10": (),
    "FAIL-6": ("StoreConformance.test_markers_of_data_the_store_does_not_hold_are_refused",),
    "FAIL-7": (),
    "MEM-14": (),
    "PAY-9": (),
    "RUN-18": (),
    "RUN-19": (),
    "SIG-5": (),
}

SUITES = {"StoreConformance": StoreConformance, "RunnerConformance": RunnerConformance}


def not_backend(cid: str) -> bool:
    return cid in NOT_BACKEND or cid.split("-")[0] in NOT_BACKEND


def must_clauses() -> set[str]:
    return {cid for cid, level in clauses().items() if level == "MUST"}


def clause_text(cid: str) -> str:
    """The clause's text in the spec, up to the next clause or heading."""
    text = SPEC.read_text(encoding="utf-8")
    m = re.search(rf"^- \*\*{re.escape(cid)}\*\* .*?(?=^- \*\*|^#|\Z)", text, re.M | re.S)
    assert m, cid
    return m.group(0)


def kit_citations() -> dict[str, set[str]]:
    """Clause id -> the kit checks citing it, as ``Suite.check``."""
    found: dict[str, set[str]] = {}
    for suite, cls in SUITES.items():
        for name in dir(cls):
            for cid in getattr(getattr(cls, name), CLAUSES_ATTR, ()) if name.startswith("test_") else ():
                found.setdefault(cid, set()).add(f"{suite}.{name}")
    return found


def test_every_must_clause_is_mapped() -> None:
    """KIT-10: each MUST clause is in the map or binds no backend; the map holds MUST clauses only."""
    musts = must_clauses()
    unmapped = sorted(c for c in musts if c not in MUST_MAP and not not_backend(c))
    assert not unmapped, f"MUST clauses a backend can violate, missing from MUST_MAP (add their checks): {unmapped}"
    wrong = sorted(c for c in MUST_MAP if c not in musts or not_backend(c))
    assert not wrong, f"MUST_MAP lists clauses that are no MUST clause of a backend: {wrong}"


def test_each_mapped_check_exists_and_cites_its_clause() -> None:
    """KIT-10: a listed check is a check of the suite and cites the clause; no kit check citing a mapped
    clause is left out of the map."""
    cited = kit_citations()
    for cid, checks in MUST_MAP.items():
        assert set(checks) == cited.get(cid, set()), (
            f"{cid}: MUST_MAP lists {sorted(checks)}, the kit's checks citing it are {sorted(cited.get(cid, set()))}"
        )


def test_an_unchecked_clause_says_why_in_the_spec() -> None:
    """KIT-10: a MUST clause the kit does not check says why after ``_Kit:_``; a checked one says nothing
    of the kind."""
    for cid, checks in MUST_MAP.items():
        said = "_Kit:_ not checked" in clause_text(cid)
        problem = "checked, yet the spec says not checked" if checks else "unchecked, yet the spec gives no reason"
        assert said == (not checks), f"{cid}: {problem}"


def test_the_spec_names_what_binds_no_backend() -> None:
    """KIT-10: every prefix and id left out of the map is named in KIT-10's text, and the map can fail."""
    text = clause_text("KIT-10")
    missing = sorted(x for x in NOT_BACKEND if not re.search(rf"\b{re.escape(x)}\b", text))
    assert not missing, f"KIT-10 does not name these clauses left out of the map: {missing}"
    assert "IDN-1" in MUST_MAP and not not_backend("STORE-1") and not_backend("PLG-1")
