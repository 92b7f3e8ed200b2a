"""The learner samples a question's n plans from one read of the planner prompt (issue 15: a
cheaper test-time learning batch). `generate(num_return_sequences=n)` ran the prompt n times."""

from __future__ import annotations

import pytest

from mia.training.config import LoraSettings

PROMPT = [
    {"role": "system", "content": "You write short numbered search plans."},
    {
        "role": "user",
        "content": "Plan the searches for: which magazine was started first, Arthur's Magazine "
        "or First for Women? Give numbered steps and no facts.",
    },
]


OTHER = [{"role": "user", "content": "Plan the searches for: where was the director of Gang Of Four born?"}]


@pytest.fixture(scope="module")
def policy(data_dir):
    import torch

    from mia.training.online.policy import PlannerPolicy
    from mia.training.policy import resolve_weights

    torch.set_num_threads(1)
    base, _ = resolve_weights("local:smollm2")
    return PlannerPolicy(base, None, lora=LoraSettings(), learning_rate=1e-3)


def _count_tokens(model) -> tuple[list[int], object]:
    seen: list[int] = []
    handle = model.get_base_model().model.embed_tokens.register_forward_hook(
        lambda _module, args, _out: seen.append(int(args[0].numel()))
    )
    return seen, handle


@pytest.mark.real_model
def test_n_continuations_read_the_prompt_once_and_match_generate(policy) -> None:
    import torch

    ids = policy.prompt_ids(PROMPT)
    n, new = 3, 6
    seen, handle = _count_tokens(policy.model)
    try:
        policy.sample(PROMPT, n, max_new_tokens=new)
    finally:
        handle.remove()
    # the prompt (but its last token) once, then n rows of one token per step
    assert sum(seen) <= len(ids) - 1 + n * new < n * len(ids)
    shared = policy.generate_from_prompt(ids, n, max_new_tokens=new, do_sample=False)
    with torch.no_grad():
        plain = policy.model.generate(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            do_sample=False,
            max_new_tokens=new,
            pad_token_id=policy.tokenizer.pad_token_id,
        )
    assert shared.shape[0] == n and all(row == plain[0].tolist() for row in shared.tolist())  # greedy: the same tokens


@pytest.mark.real_model
def test_sampled_plans_keep_their_token_ids_for_the_update(policy) -> None:
    import torch

    torch.manual_seed(0)
    plans = policy.sample(PROMPT, 4, max_new_tokens=8)
    assert len(plans) == 4 and all(p.prompt_ids == policy.prompt_ids(PROMPT) for p in plans)
    assert all(0 < len(p.completion_ids) <= 8 for p in plans)
    assert all(p.text == policy.tokenizer.decode(p.completion_ids, skip_special_tokens=True).strip() for p in plans)
    stats = policy.grpo_step([[(plans[0], 1.0), (plans[1], 0.0), (plans[2], 0.5), (plans[3], 0.0)]])
    assert stats["updated"] == 1.0 and stats["loss"] == stats["loss"]


@pytest.mark.real_model
def test_a_sampled_plan_ends_at_the_first_stop_string(policy) -> None:
    """The learner samples with the plan node's stop strings: nothing is generated (or learned)
    past the first one, as a served plan ends there."""
    import torch

    torch.manual_seed(0)
    plans = policy.sample(PROMPT, 3, max_new_tokens=40, stop=[".", "\n"])
    raws = [policy.tokenizer.decode(p.completion_ids, skip_special_tokens=True) for p in plans]
    assert all("." not in raw.rstrip(".\n ") and "\n" not in raw.rstrip(".\n ") for raw in raws), raws
    assert any(raw.rstrip(" ").endswith((".", "\n")) and len(p.completion_ids) < 40 for raw, p in zip(raws, plans)), (
        raws
    )


@pytest.mark.real_model
def test_a_stop_request_cuts_sampling_and_leaves_the_weights_as_they_were(policy) -> None:
    """close() during a batch: `generate` ends at the next token, and a GRPO step stopped between
    its samples changes no weight (its gradients are dropped)."""
    import torch

    from mia.training.online.stopping import LearningStopped

    calls = {"n": 0}

    def after_three_tokens() -> bool:
        calls["n"] += 1
        return calls["n"] > 3

    torch.manual_seed(0)
    cut = policy.sample(PROMPT, 2, max_new_tokens=40, should_stop=after_three_tokens)
    assert all(len(p.completion_ids) <= 4 for p in cut), [len(p.completion_ids) for p in cut]
    plans = policy.sample(PROMPT, 2, max_new_tokens=6)
    others = policy.sample(OTHER, 2, max_new_tokens=6)
    before = [p.detach().clone() for p in policy.params]
    seen = {"n": 0}

    def after_first_question() -> bool:
        seen["n"] += 1
        return seen["n"] > 1

    with pytest.raises(LearningStopped):
        groups = [[(plans[0], 1.0), (plans[1], 0.0)], [(others[0], 1.0), (others[1], 0.0)]]
        policy.grpo_step(groups, should_stop=after_first_question)
    assert all(torch.equal(a, b) for a, b in zip(before, policy.params, strict=True))
    assert all(p.grad is None for p in policy.params) and not policy.model.training


@pytest.mark.real_model
def test_a_questions_plans_share_one_prompt_pass_with_the_same_gradients(policy) -> None:
    """The GRPO step runs a question's prompt once for its n plans (KV cache repeated): the loss
    and the LoRA's gradients are those of one full pass per plan, as the step used to run."""
    import torch

    from mia.training.online.policy import SampledPlan

    torch.manual_seed(1)
    plans = policy.sample(PROMPT, 3, max_new_tokens=7) + policy.sample(OTHER, 2, max_new_tokens=5)
    plans[1] = SampledPlan(plans[1].text, plans[1].prompt_ids, plans[1].completion_ids[:2])  # rows of other lengths
    items = list(zip(plans, [1.0, -0.5, -0.5, 0.7, -0.7], strict=True))
    total = sum(len(p.completion_ids) for p, _ in items)
    policy.model.train()
    policy.optimizer.zero_grad(set_to_none=True)
    reference = 0.0
    for plan, adv in items:  # one full pass per plan
        ids = torch.tensor([plan.prompt_ids + plan.completion_ids])
        logits = policy.model(input_ids=ids).logits[0, len(plan.prompt_ids) - 1 : -1]
        logp = torch.log_softmax(logits.float(), -1).gather(1, ids[0, len(plan.prompt_ids) :, None]).squeeze(1)
        loss = -(adv * logp).sum() / total
        loss.backward()
        reference += float(loss.detach())
    expected = [p.grad.detach().clone() for p in policy.params]
    policy.optimizer.zero_grad(set_to_none=True)
    shared = policy.accumulate_gradients(items)
    got = [p.grad.detach().clone() for p in policy.params]
    policy.optimizer.zero_grad(set_to_none=True)
    policy.model.eval()
    assert shared == pytest.approx(reference, rel=1e-4, abs=1e-6)
    assert any(g.abs().sum() > 0 for g in expected)
    for a, b in zip(expected, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-6)
