"""The sentence reader on questions as teams type them in a channel (issue 20's held-out sweep):
active users and request rates are traffic, not concurrency (Little's law, said); punctuation is
never a skipped word; a card's name beside a model size is the card; and a table of realistic
questions in Chinese, English and both, each with every slot it must yield and no word the answer
needed left skipped."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from engine import datasize, deadline, rates, traffic
from engine.i18n import language
from engine.reader import has_slot, read, read_summary
from engine.request import Request


def _due(kind: str) -> int:
    """Days to a deadline said relative to today, as the reader counts them today."""
    return deadline.days_until(kind, date.today())[0]


def slots(text: str, *, reply: bool = False) -> dict[str, Any]:
    return {k: v for k, v in read(text, reply=reply).values.items() if k not in ("asked_in",)}


# -- active users and request rates: traffic, never concurrent users ------------------------------

DAILY = rates.REQUESTS_PER_DAILY_USER
MONTHLY = rates.REQUESTS_PER_MONTHLY_USER
AT_PEAK = traffic.SECONDS_PER_DAY / traffic.DEFAULT_PEAK  # requests a day per request a second


@pytest.mark.parametrize(("text", "people", "each"), [
    ("qwen3-32b 推理 日活1000人", 1000, DAILY),
    ("日活跃用户数2万，部署qwen2.5-72b够吗", 20000, DAILY),
    ("2万日活 部署qwen3-8b", 20000, DAILY),
    ("qwen3-32b serve 1000 users a day", 1000, DAILY),
    ("DAU 5k, llama-3.1-8b inference", 5000, DAILY),
    ("llama-3.1-8b for 3,000 daily active users", 3000, DAILY),
    ("每天大概500人使用 qwen3-14b 部署", 500, DAILY),
    ("qwen3-32b 部署 月活5万", 50000, MONTHLY),
    ("MAU 200k on qwen3-32b, which GPUs?", 200000, MONTHLY),
])
def test_active_users_are_requests_a_day_not_concurrency(text: str, people: int, each: float) -> None:
    reading = read(text)
    assert "users" not in reading.values  # 1000 people a day are not 1000 sequences in flight
    assert reading.values["requests"] == round(people * each)
    assert reading.values["method"] == "inference"
    assert reading.traffic is not None and f"{people:,}" in reading.traffic
    assert any("ChatGPT" in note and "requests=" in note for note in reading.notes)
    assert not reading.skipped


@pytest.mark.parametrize(("text", "per_second", "word"), [
    ("qwen3-32b QPS 20", 20, "QPS"),
    ("峰值QPS 50 部署qwen3-32b", 50, "QPS"),
    ("qwen3-32b serve at 20 RPS", 20, "RPS"),
    ("qwen3-32b 每秒20个请求", 20, "QPS"),
    ("llama-3.1-8b, 5 requests per second, how many L40S", 5, "QPS"),
    ("qwen3-32b 每分钟600次请求", 10, "RPM"),
    ("RPM 1200 for qwen3-8b", 20, "RPM"),
])
def test_a_rate_a_second_is_the_busiest_hours_rate(text: str, per_second: float, word: str) -> None:
    reading = read(text)
    assert "users" not in reading.values
    assert reading.values["requests"] == round(per_second * AT_PEAK)
    assert reading.traffic is not None and word in reading.traffic
    assert any("Little" in note for note in reading.notes)
    # the traffic model takes it from there: the busiest hour runs at exactly the rate said
    req = Request(model="qwen3-32b", method="inference", requests=reading.values["requests"])
    load = traffic.load_of(req)
    assert load is not None and load.peak_rate == pytest.approx(per_second, rel=1e-4)


def test_users_follow_from_littles_law_not_from_the_head_count() -> None:
    requests = read("日活1000人 qwen3-32b").values["requests"]
    req = Request(model="qwen3-32b", method="inference", requests=requests)
    served, doc = traffic.with_traffic(req)
    assert doc is not None and 1 <= served.users < 1000
    assert served.users == traffic.users_for(traffic.load_of(req))  # type: ignore[arg-type]


def test_the_read_line_says_what_was_said_and_what_it_became() -> None:
    with language("zh"):
        line = read_summary(read("qwen3-32b 推理 日活1000人").values, "qwen3-32b 推理 日活1000人")
    assert "日活 1,000 人" in line and "每天" in line
    en = read("qwen3-32b QPS 20")
    assert "20 QPS at the peak" in " · ".join(en.read)


def test_two_traffic_readings_are_asked_not_guessed() -> None:
    from engine.reader import Ambiguous

    with pytest.raises(Ambiguous):
        read("qwen3-32b 日活1000人 每天5万次请求")


def test_a_thread_changes_the_active_users() -> None:
    assert slots("日活改成5000", reply=True) == {"requests": round(5000 * DAILY)}
    assert slots("what about 50 QPS", reply=True) == {"requests": round(50 * AT_PEAK)}


# -- punctuation, cards named like sizes ---------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("we own 16 A800 (2 servers), qwen3-32b serve",
     {"gpus": 16, "gpu": "a800", "model": "qwen3-32b", "method": "inference", "owned": True}),
    ("qwen3-32b: self-hosted vs API?", {"model": "qwen3-32b", "method": "inference"}),
    ("【qwen3-32b】部署「8张4090」够吗？", {"model": "qwen3-32b", "method": "inference",
                                          "gpus": 8, "gpu": "rtx-4090"}),
    ("qwen3:32b serve 10 users", {"model": "qwen3-32b", "method": "inference", "users": 10}),
    ("13B lora on 910b", {"model": "13B", "method": "lora", "gpu": "ascend-910b"}),
    ("70b 推理 910b 8卡", {"model": "70B", "method": "inference", "gpu": "ascend-910b", "gpus": 8}),
])
def test_punctuation_is_never_skipped_and_a_card_is_a_card(text: str, want: dict[str, Any]) -> None:
    reading = read(text)
    assert slots(text) == want
    assert not reading.skipped, reading.skipped


def test_a_card_size_alone_is_still_a_model_size() -> None:
    assert slots("910B inference") == {"model": "910B", "method": "inference"}


# -- the sweep: questions as a team types them in Slack -------------------------------------------
# Each with every slot it must yield and the kind of question. Words a slot does not take yet are
# listed in KNOWN_GAPS (a card the catalog lacks, words no slot takes): the rest skip nothing.

SWEEP: list[tuple[str, dict[str, Any], str | None]] = [
    ("我们有两台8卡A800，想部署Qwen3 32B给全公司用，大概30-50人同时在线，够不够",
     {"gpus": 16, "gpu": "a800", "model": "qwen3-32b", "users": 50, "method": "inference",
      "owned": True}, "fits"),
    ("DeepSeek R1 671B 满血版 部署 需要几台H20",
     {"model": "deepseek-r1", "gpu": "h20", "method": "inference"}, "fewest"),
    ("ds v3 推理 上下文64k 并发20 需要多少张H800",
     {"model": "deepseek-v3", "context": 65536, "users": 20, "gpu": "h800",
      "method": "inference"}, "fewest"),
    ("llama3-70b-instruct 4bit 双卡4090 能跑吗",
     {"model": "llama-3-70b", "gpus": 2, "gpu": "rtx-4090", "quant": "int4",
      "method": "inference"}, "fits"),
    ("想租卡做qwen2.5-7b的lora微调，数据5万条，一周内完成，预算1w",
     {"mode": "rent", "model": "qwen2.5-7b", "days": 7.0, "tokens": 50_000 * datasize.TOKENS_PER_SAMPLE,
      "budget": {"amount": 10000.0, "currency": "CNY"}, "method": "lora"}, None),
    ("qwen3-32b 自建还是调API划算？每天2万次请求",
     {"model": "qwen3-32b", "requests": 20000, "method": "inference"}, None),
    ("公司有4块3090，能微调什么模型",
     {"gpus": 4, "gpu": "rtx-3090", "method": "full-finetune", "owned": True}, None),
    ("8张910B能不能跑满血deepseek",
     {"gpus": 8, "gpu": "ascend-910b", "model": "deepseek-r1", "method": "inference"}, "fits"),
    ("70B模型推理，用L20还是H20？并发100",
     {"model": "70B", "users": 100, "method": "inference"}, None),
    ("Qwen3-235B-A22B 部署 8卡H200 够吗",
     {"model": "qwen3-235b-a22b", "gpus": 8, "gpu": "h200", "method": "inference"}, "fits"),
    ("qwen3 8b qlora 单张4060ti 16g 行不行",
     {"model": "qwen3-8b", "method": "qlora", "gpu": "rtx-4060-ti-16gb", "gpus": 1}, "fits"),
    ("预算50万以内，部署一个32B的模型给客服用，日活2000",
     {"budget": {"amount": 500000.0, "currency": "CNY"}, "model": "32B", "requests": 18367,
      "method": "inference"}, None),
    ("glm-4.5-air 推理 4张L40S",
     {"model": "glm-4.5-air", "gpus": 4, "gpu": "l40s", "method": "inference"}, None),
    ("帮忙看下：kimi k2 满血部署最少要多少张H100",
     {"model": "kimi-k2", "gpu": "h100-sxm", "method": "inference"}, "fewest"),
    ("买卡还是租卡？qwen2.5-72b 推理 100并发 用3年",
     {"model": "qwen2.5-72b", "users": 100, "months": 36, "method": "inference"}, None),
    ("gpt-oss-120b 单卡H100 能跑吗 上下文128k",
     {"model": "gpt-oss-120b", "gpus": 1, "gpu": "h100-sxm", "context": 131072,
      "method": "inference"}, "fits"),
    ("我们只有一张4090，想跑qwen3-14b，够用吗",
     {"gpus": 1, "gpu": "rtx-4090", "model": "qwen3-14b", "owned": True, "method": "inference"}, "fits"),
    ("7B 全参微调 序列长度4k 8张A100 要多久 数据量1亿token",
     {"model": "7B", "seq": 4096, "gpus": 8, "gpu": "a100-80gb", "tokens": 100000000,
      "method": "full-finetune"}, None),
    ("qwen3-30b-a3b 推理 首token 1秒内 并发50",
     {"model": "qwen3-30b-a3b", "ttft": 1.0, "users": 50, "method": "inference"}, None),
    ("两台8卡H20 部署deepseek-v3 能撑多少并发",
     {"gpus": 16, "gpu": "h20", "model": "deepseek-v3", "method": "inference"}, "capacity"),
    ("32B模型 QLoRA 微调 需要多大显存",
     {"model": "32B", "method": "qlora"}, None),
    ("百川2 13b 微调 单卡A6000",
     {"model": "baichuan2-13b", "gpus": 1, "gpu": "rtx-a6000", "method": "full-finetune"}, None),
    ("minimax-m2 部署 需要什么配置",
     {"model": "minimax-m2", "method": "inference"}, None),
    ("Qwen2.5-VL-7B 推理 一张L4 能跑吗",
     {"model": "qwen2.5-vl-7b", "gpus": 1, "gpu": "l4", "method": "inference"}, "fits"),
    ("每秒10个请求 qwen3-8b 部署 用什么卡",
     {"requests": 288000, "model": "qwen3-8b", "method": "inference"}, None),
    ("qwen3-32b 部署 2台4卡L40",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "l40", "method": "inference"}, None),
    ("deepseek-r1-distill-qwen-32b 推理 并发30 上下文16k 在成都机房",
     {"model": "deepseek-r1-distill-qwen-32b", "users": 30, "context": 16384,
      "region": "chengdu", "method": "inference"}, None),
    ("14B 模型 LoRA 微调 预算3万 租用 两周内",
     {"model": "14B", "budget": {"amount": 30000.0, "currency": "CNY"}, "mode": "rent",
      "days": 14.0, "method": "lora"}, None),
    ("llama 3.1 405b fp8 部署 16张H100 够不够",
     {"model": "llama-3.1-405b", "quant": "fp8", "gpus": 16, "gpu": "h100-sxm",
      "method": "inference"}, "fits"),
    ("Qwen3-Coder-480B-A35B 部署给200个开发者用",
     {"model": "qwen3-coder-480b-a35b", "requests": 937, "method": "inference"}, None),
    ("我们月活10万，qwen3-32b够不够",
     {"requests": 367347, "model": "qwen3-32b", "method": "inference"}, "fits"),
    ("72B 推理 用4090魔改48G 4张",
     {"model": "72B", "gpus": 4, "gpu": "rtx-4090-48gb", "method": "inference"}, None),
    ("7B预训练 1T tokens 3个月内 需要多少张H800",
     {"model": "7B", "tokens": 1000000000000, "days": 90.0, "gpu": "h800", "method": "pretrain"}, "fewest"),
    ("qwen3-4b 在手机上？不，部署在一张T4上",
     {"model": "qwen3-4b", "method": "inference", "gpu": "t4", "gpus": 1}, None),
    ("请问qwen3-32b在8张A800上能服务多少人",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "a800", "method": "inference"}, "capacity"),
    ("gemma-3-27b 推理 2x RTX 5090",
     {"model": "gemma-3-27b", "gpus": 2, "gpu": "rtx-5090", "method": "inference"}, None),
    ("Can we serve Qwen3 32B on 2x H100 for 40 concurrent users?",
     {"model": "qwen3-32b", "gpus": 2, "gpu": "h100-sxm", "users": 40, "method": "inference"}, "fits"),
    ("Is one A100 80GB enough to LoRA fine-tune llama-3.1-8b?",
     {"gpus": 1, "gpu": "a100-80gb", "model": "llama-3.1-8b", "method": "lora"}, "fits"),
    ("should we buy or rent for deepseek v3 inference, ~100 users, 32k context",
     {"model": "deepseek-v3", "users": 100, "context": 32768, "method": "inference"}, None),
    ("how many H200s do we need to serve DeepSeek R1 671B to 64 users",
     {"gpu": "h200", "model": "deepseek-r1", "users": 64, "method": "inference"}, "fewest"),
    ("we have 8 x L40S, what's the largest model we can fine-tune with QLoRA?",
     {"gpus": 8, "gpu": "l40s", "model": "largest", "method": "qlora", "owned": True}, None),
    ("llama3-70b-instruct serve 20 users, budget $150k",
     {"model": "llama-3-70b", "users": 20, "budget": {"amount": 150000.0, "currency": "USD"},
      "method": "inference"}, None),
    ("qwen3-32b self-host vs API for 50k requests a day?",
     {"model": "qwen3-32b", "requests": 50000, "method": "inference"}, None),
    ("QLoRA on Llama 3.3 70B with a single RTX 6000 Ada - does it fit?",
     {"model": "llama-3.3-70b", "gpus": 1, "gpu": "rtx-6000-ada", "method": "qlora"}, "fits"),
    ("what GPUs for serving mixtral 8x7b at 500ms TTFT, 30 users",
     {"model": "mixtral-8x7b", "ttft": 0.5, "users": 30, "method": "inference"}, None),
    ("pretrain a 1B model on 100B tokens within 2 weeks, cheapest option?",
     {"model": "1B", "tokens": 100000000000, "days": 14.0, "goal": "cost", "method": "pretrain"}, None),
    ("fine-tune qwen2.5-14b full params on 4xA100 80G, seq 8k",
     {"model": "qwen2.5-14b", "gpus": 4, "gpu": "a100-80gb", "seq": 8192,
      "method": "full-finetune"}, None),
    ("is 4x4090 enough for qwen3-30b-a3b with 64k context?",
     {"gpus": 4, "gpu": "rtx-4090", "model": "qwen3-30b-a3b", "context": 65536,
      "method": "inference"}, "fits"),
    ("we own 2 H100 servers, can they serve kimi k2?",
     {"gpus": 16, "gpu": "h100-sxm", "model": "kimi-k2", "method": "inference", "owned": True}, "fits"),
    ("serve gpt-oss-20b to 1000 users a day on L4s",
     {"model": "gpt-oss-20b", "requests": 9184, "gpu": "l4", "method": "inference"}, None),
    ("deploy glm-4.6 in China, budget 2M CNY, buy",
     {"model": "glm-4.6", "market": "china",
      "budget": {"amount": 2000000.0, "currency": "CNY"}, "mode": "buy", "method": "inference"}, None),
    ("renting 8 H100s for a week to LoRA llama 3.1 70b, how much?",
     {"mode": "rent", "gpus": 8, "gpu": "h100-sxm", "model": "llama-3.1-70b", "method": "lora"}, None),
    ("qwen3 235b fp8 on one 8xH200 node, max concurrency?",
     {"model": "qwen3-235b-a22b", "quant": "fp8", "gpus": 8, "gpu": "h200",
      "method": "inference"}, "capacity"),
    ("phi-4 inference on a 3090 at 4-bit",
     {"model": "phi-4", "gpus": 1, "gpu": "rtx-3090", "method": "inference", "quant": "int4"}, None),
    ("Llama-4-Scout 17B-16E serving, 10 users, 1 x H100?",
     {"model": "llama-4-scout", "users": 10, "gpus": 1, "gpu": "h100-sxm",
      "method": "inference"}, None),
    ("7b lora, 1 gpu, 24gb, fastest option",
     {"model": "7B", "gpus": 1, "goal": "time", "method": "lora", "card_memory": 24.0}, None),
    ("need ~20 QPS for qwen3-14b, what hardware",
     {"requests": 576000, "model": "qwen3-14b", "method": "inference"}, None),
    ("DeepSeek-V3.1 with 128k context for 8 users on H20s",
     {"model": "deepseek-v3.1", "context": 131072, "users": 8, "gpu": "h20",
      "method": "inference"}, None),
    ("deepseek r1 distill llama 70b 4bit on 2 3090s?",
     {"model": "deepseek-r1-distill-llama-70b", "gpus": 2, "gpu": "rtx-3090", "quant": "int4",
      "method": "inference"}, None),
    ("we've got 16 A800 in 2 servers; full fine-tune 32B?",
     {"gpus": 16, "gpu": "a800", "model": "32B", "method": "full-finetune", "owned": True}, None),
    ("qwen2.5-72b-instruct-awq on 2x A6000, 10 concurrent",
     {"model": "qwen2.5-72b", "quant": "awq", "gpus": 2, "gpu": "rtx-a6000", "users": 10,
      "method": "inference"}, None),
    ("qwen3-32b 部署 we have 8张4090 50 users 够吗",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "users": 50, "method": "inference",
      "owned": True}, "fits"),
    ("llama-3.1-8b LoRA 微调, budget 5万, 两周内 done",
     {"model": "llama-3.1-8b", "budget": {"amount": 50000.0, "currency": "CNY"}, "days": 14.0,
      "method": "lora"}, None),
    ("deepseek-v3 推理 H20 x 16, context 32k, 并发 64",
     {"model": "deepseek-v3", "gpus": 16, "gpu": "h20", "context": 32768, "users": 64,
      "method": "inference"}, None),
    ("帮我算下 Qwen3-32B serve 50 concurrent 上下文 32k 预算 100万",
     {"model": "qwen3-32b", "users": 50, "context": 32768,
      "budget": {"amount": 1000000.0, "currency": "CNY"}, "method": "inference"}, None),
    ("qwen3-14b 推理，RTX 4090 × 2，30 users",
     {"model": "qwen3-14b", "gpus": 2, "gpu": "rtx-4090", "users": 30, "method": "inference"}, None),
    ("想用 H100 租 2 周 做 70b 的 qlora",
     {"gpu": "h100-sxm", "mode": "rent", "days": 14.0, "model": "70B", "method": "qlora"}, None),
    ("mixtral-8x22b 部署 on 8 A100 够不够?",
     {"model": "mixtral-8x22b", "gpus": 8, "gpu": "a100-80gb", "method": "inference"}, "fits"),
    ("qwen3-8b fine-tune on 1 × 4090, 序列 2k",
     {"model": "qwen3-8b", "gpus": 1, "gpu": "rtx-4090", "seq": 2048, "method": "full-finetune"}, None),
    ("部署 qwen3-32b，QPS 5，首字 2s 内",
     {"model": "qwen3-32b", "requests": 144000, "ttft": 2.0, "method": "inference"}, None),
    ("ds r1 满血 两台8卡H20 能带多少人",
     {"model": "deepseek-r1", "gpus": 16, "gpu": "h20", "method": "inference"}, "capacity"),
    ("Qwen2.5 72B 推理 8卡L20 并发 100 够吗",
     {"model": "qwen2.5-72b", "gpus": 8, "gpu": "l20", "users": 100, "method": "inference"}, "fits"),
    ("yi-1.5-34b 推理 单卡 A100 40G",
     {"model": "yi-1.5-34b", "gpus": 1, "gpu": "a100-40gb", "method": "inference"}, None),
    ("internlm2.5-20b LoRA 单卡4090",
     {"model": "internlm2.5-20b", "gpus": 1, "gpu": "rtx-4090", "method": "lora"}, None),
    ("qwen3-32b 推理 日均请求5万，输入2k，输出500",
     {"model": "qwen3-32b", "requests": 50000, "prompt": 2048, "output": 500,
      "method": "inference"}, None),
    ("llama 3.1 70b 全参微调 需要几台8卡H800",
     {"model": "llama-3.1-70b", "gpu": "h800", "method": "full-finetune"}, "fewest"),
    ("DeepSeek-R1 蒸馏 32B 部署 两张4090 并发10",
     {"model": "deepseek-r1-distill-qwen-32b", "gpus": 2, "gpu": "rtx-4090", "users": 10,
      "method": "inference"}, None),
    ("70b 推理 国内 租 4090 还是 A800 划算",
     {"model": "70B", "market": "china", "mode": "rent", "method": "inference"}, None),
    ("Qwen3 32B 在 8张 4090 上 128k 上下文 能撑几个并发",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "context": 131072,
      "method": "inference"}, "capacity"),
    ("13B 全参 两台 8 卡 A100 1周内 训完 100亿token",
     {"model": "13B", "gpus": 16, "gpu": "a100-80gb", "days": 7.0, "tokens": 10000000000,
      "method": "full-finetune"}, None),
    ("部署qwen3-32b给500人的公司用，同时在线大概10%",
     {"model": "qwen3-32b", "users": 50, "method": "inference"}, None),
]

# a second round, after the first's fixes
SWEEP_2: list[tuple[str, dict[str, Any], str | None]] = [
    ("老板问：32b的模型部署给100个人用要花多少钱",
     {"model": "32B", "users": 100, "method": "inference"}, None),
    ("qwen3 32b awq 4张3090 跑得动吗",
     {"model": "qwen3-32b", "quant": "awq", "gpus": 4, "gpu": "rtx-3090", "method": "inference"}, "fits"),
    ("我们预算只有20w，想本地部署一个能用的大模型，日活500左右",
     {"budget": {"amount": 200000.0, "currency": "CNY"}, "requests": 4592,
      "method": "inference"}, None),
    ("DeepSeek-R1-Distill-Qwen-14B 单卡4090 上下文32K 并发5",
     {"model": "deepseek-r1-distill-qwen-14b", "gpus": 1, "gpu": "rtx-4090", "context": 32768,
      "users": 5, "method": "inference"}, None),
    ("Qwen2.5-72B-Instruct 全参微调 最少几台8卡A800",
     {"model": "qwen2.5-72b", "gpu": "a800", "method": "full-finetune"}, "fewest"),
    ("用H800训练7B模型，数据200亿token，两个月内，要几张卡",
     {"gpu": "h800", "model": "7B", "tokens": 20000000000, "days": 60.0,
      "method": "full-finetune"}, "fewest"),
    ("想在A100上跑llama3.1-8b的qlora，40G版本够吗",
     {"gpu": "a100-40gb", "model": "llama-3.1-8b", "method": "qlora"}, "fits"),
    ("能不能用两张5090跑qwen3-32b fp8",
     {"gpus": 2, "gpu": "rtx-5090", "model": "qwen3-32b", "quant": "fp8", "method": "inference"}, "fits"),
    ("Qwen3-235B-A22B-Instruct-2507 4bit 单机8卡4090够不够",
     {"model": "qwen3-235b-a22b-instruct-2507", "gpus": 8, "gpu": "rtx-4090", "quant": "int4",
      "method": "inference"}, "fits"),
    ("租H100还是H20划算，推理qwen3-235b",
     {"mode": "rent", "model": "qwen3-235b-a22b", "method": "inference"}, None),
    ("1000个并发，deepseek v3.1，需要多少台H200",
     {"users": 1000, "model": "deepseek-v3.1", "gpu": "h200", "method": "inference"}, "fewest"),
    ("首字延迟要求1.5秒，并发200，qwen2.5-32b，用什么卡",
     {"ttft": 1.5, "users": 200, "model": "qwen2.5-32b", "method": "inference"}, None),
    ("qwen3-8b 微调 LoRA rank 64 序列长度 16k 单卡A6000",
     {"model": "qwen3-8b", "rank": 64, "seq": 16384, "gpus": 1, "gpu": "rtx-a6000",
      "method": "lora"}, None),
    ("is a single H200 enough for gpt-oss-120b with 50 users?",
     {"gpus": 1, "gpu": "h200", "model": "gpt-oss-120b", "users": 50, "method": "inference"}, "fits"),
    ("How much would it cost to self-host Qwen3-235B vs using an API at 1M requests/day",
     {"model": "qwen3-235b-a22b", "requests": 1000000, "method": "inference"}, None),
    ("can a mac studio run 70b? no — can 2x A6000 run llama-3.3-70b at 4bit",
     {"model": "llama-3.3-70b", "gpus": 2, "gpu": "rtx-a6000", "quant": "int4",
      "method": "inference"}, "fits"),
    ("we need 128k context for qwen3-32b, 10 users, H100 or H200?",
     {"context": 131072, "model": "qwen3-32b", "users": 10, "method": "inference"}, None),
    ("LoRA fine-tune deepseek-r1-distill-llama-8b on a 4090, 8k seqs, within 3 days",
     {"model": "deepseek-r1-distill-llama-8b", "gpus": 1, "gpu": "rtx-4090", "seq": 8192,
      "days": 3.0, "method": "lora"}, None),
    ("what's the cheapest way to serve llama-3.1-8b to 200 concurrent users in the US",
     {"goal": "cost", "model": "llama-3.1-8b", "users": 200, "market": "global",
      "method": "inference"}, None),
    ("pretraining 3B from scratch, 300B tokens, 64 H100s, how long?",
     {"model": "3B", "tokens": 300000000000, "gpus": 64, "gpu": "h100-sxm",
      "method": "pretrain"}, None),
    ("our budget is 500k USD, serve kimi-k2 with 32 concurrent, buy",
     {"budget": {"amount": 500000.0, "currency": "USD"}, "model": "kimi-k2", "users": 32,
      "mode": "buy", "method": "inference"}, None),
    ("qwen3-30b-a3b QPS=10 prompt 3k output 1k",
     {"model": "qwen3-30b-a3b", "requests": 288000, "prompt": 3072, "output": 1024,
      "method": "inference"}, None),
    ("rent 4 A100 80GB for qwen2.5-32b qlora, 2 weeks, budget $5k",
     {"mode": "rent", "gpus": 4, "gpu": "a100-80gb", "model": "qwen2.5-32b", "days": 14.0,
      "budget": {"amount": 5000.0, "currency": "USD"}, "method": "qlora"}, None),
    ("Does 8xH20 fit DeepSeek-V3 FP8 with 64k context?",
     {"gpus": 8, "gpu": "h20", "model": "deepseek-v3", "quant": "fp8", "context": 65536,
      "method": "inference"}, None),
    ("glm 4.6 推理 8张H20 够不够 并发 50",
     {"model": "glm-4.6", "gpus": 8, "gpu": "h20", "users": 50, "method": "inference"}, "fits"),
    ("deepseek-v3.2-exp 部署 两台 H200",
     {"model": "deepseek-v3.2-exp", "gpus": 16, "gpu": "h200", "method": "inference"}, None),
    ("qwen3-vl-8b 推理 L20 单卡 同时20人",
     {"model": "qwen3-vl-8b", "gpu": "l20", "gpus": 1, "users": 20, "method": "inference"}, None),
    ("Yi 34B 4bit 双卡3090 能跑吗",
     {"model": "yi-1.5-34b", "gpus": 2, "gpu": "rtx-3090", "quant": "int4",
      "method": "inference"}, "fits"),
    ("llama 2 70b 全量微调 要几张A100",
     {"model": "llama-2-70b", "gpu": "a100-80gb", "method": "full-finetune"}, "fewest"),
    ("千问3 32B 部署 每天5000人用",
     {"model": "qwen3-32b", "requests": 45918, "method": "inference"}, None),
    ("Qwen3 32B 在 4 张 4090 上并发 30 够吗？上下文 8k",
     {"model": "qwen3-32b", "gpus": 4, "gpu": "rtx-4090", "users": 30, "context": 8192,
      "method": "inference"}, "fits"),
    ("mixtral 8x7b 推理 国外 租 A100 每月多少钱",
     {"model": "mixtral-8x7b", "market": "global", "mode": "rent", "gpu": "a100-80gb",
      "method": "inference"}, None),
    ("想用 ollama 在一张 4090 上跑 qwen3:32b",
     {"engine": "llama.cpp", "gpus": 1, "gpu": "rtx-4090", "model": "qwen3-32b",
      "method": "inference"}, None),
    ("单卡 H20 96G 跑 qwen3-32b 全参微调 行不行",
     {"gpus": 1, "gpu": "h20", "model": "qwen3-32b", "method": "full-finetune"}, "fits"),
    ("15万预算买卡，微调7B，用LoRA",
     {"budget": {"amount": 150000.0, "currency": "CNY"}, "mode": "buy", "model": "7B",
      "method": "lora"}, None),
    ("qwen-72b 推理 100并发",
     {"model": "qwen2.5-72b", "users": 100, "method": "inference"}, None),
    ("7b模型 推理 一块 a10 够吗",
     {"model": "7B", "gpus": 1, "gpu": "a10", "method": "inference"}, "fits"),
    ("ds v3.1 fp8 on 16 x H800 for 100 users, 16k context",
     {"model": "deepseek-v3.1", "quant": "fp8", "gpus": 16, "gpu": "h800", "users": 100,
      "context": 16384, "method": "inference"}, None),
    ("kimi k2 部署，8卡H200两台，并发30，上下文64k，首token 3s",
     {"model": "kimi-k2", "gpus": 16, "gpu": "h200", "users": 30, "context": 65536,
      "ttft": 3.0, "method": "inference"}, None),
    ("Qwen2.5-7B-Instruct serve 50 RPS avg, 500 input 200 output tokens",
     {"model": "qwen2.5-7b", "requests": 4320000, "prompt": 500, "output": 200,
      "method": "inference"}, None),
]

# a third round: deadlines, latency targets, horizons, owned cards
SWEEP_3: list[tuple[str, dict[str, Any], str | None]] = [
    ("下个月要上线qwen3-32b客服，并发大概80，买还是租",
     {"model": "qwen3-32b", "users": 80, "method": "inference", "days": _due("next_month")}, None),
    ("月底前要把7B模型LoRA微调完，数据1亿token，租什么卡最快",
     {"model": "7B", "tokens": 100000000, "mode": "rent", "goal": "time", "method": "lora",
      "days": _due("month_end")}, None),
    ("需要在两周后上线，deepseek-r1-distill-qwen-32b，20人同时用",
     {"days": 14.0, "model": "deepseek-r1-distill-qwen-32b", "users": 20, "method": "inference"}, None),
    ("7B 全参微调 10天之内 1B tokens 预算5万",
     {"model": "7B", "days": 10.0, "tokens": 1000000000,
      "budget": {"amount": 50000.0, "currency": "CNY"}, "method": "full-finetune"}, None),
    ("we must finish the fine-tune by end of month: llama-3.1-8b full, 2B tokens",
     {"model": "llama-3.1-8b", "tokens": 2000000000, "method": "full-finetune",
      "days": _due("month_end")}, None),
    ("train a 13B lora in under 48 hours on 500M tokens",
     {"model": "13B", "days": 2.0, "tokens": 500000000, "method": "lora"}, None),
    ("serving qwen3-14b, p99 latency first token < 2s, 40 users",
     {"model": "qwen3-14b", "ttft": 2.0, "users": 40, "method": "inference"}, None),
    ("qwen3-32b 首 token 延迟 < 800ms，并发 16",
     {"model": "qwen3-32b", "ttft": 0.8, "users": 16, "method": "inference"}, None),
    ("is 96GB enough for qwen3-32b fp16 inference?",
     {"model": "qwen3-32b", "precision": "fp16", "method": "inference", "card_memory": 96.0},
     "fits"),
    ("Qwen3-32B BF16 推理 需要多少显存 32k上下文",
     {"model": "qwen3-32b", "precision": "bf16", "context": 32768, "method": "inference"}, None),
    ("llama-3.1-70b 推理 8*A800 并发64 上下文8K 够不够用",
     {"model": "llama-3.1-70b", "gpus": 8, "gpu": "a800", "users": 64, "context": 8192,
      "method": "inference"}, "fits"),
    ("两百人同时用deepseek v3，满血，预算三百万，买什么",
     {"users": 200, "model": "deepseek-v3", "budget": {"amount": 3000000.0, "currency": "CNY"},
      "mode": "buy", "method": "inference"}, None),
    ("deepseek-r1 671b q4_k_m 用 llama.cpp 跑，4张4090 + 512G内存",
     {"model": "deepseek-r1", "quant": "q4_k_m", "engine": "llama.cpp", "gpus": 4,
      "gpu": "rtx-4090", "method": "inference", "host_memory": 512.0}, None),
    ("Qwen3-8B，单卡L40S，LoRA，r=16，max_len 4096",
     {"model": "qwen3-8b", "gpus": 1, "gpu": "l40s", "method": "lora", "rank": 16, "seq": 4096}, None),
    ("能不能在3090上全参微调1.5B的模型",
     {"gpu": "rtx-3090", "model": "1.5B", "method": "full-finetune"}, "fits"),
    ("qwen2.5-1.5b full finetune on a single 3090?",
     {"model": "qwen2.5-1.5b", "gpus": 1, "gpu": "rtx-3090", "method": "full-finetune"}, None),
    ("gpt-oss-20b on 1 L4, 5 users, ok?",
     {"model": "gpt-oss-20b", "gpus": 1, "gpu": "l4", "users": 5, "method": "inference"}, None),
    ("llama 3.2 3b on an RTX 4060?",
     {"model": "llama-3.2-3b"}, None),
    ("we already have 4 A100 40GB — is LoRA on qwen3-14b doable?",
     {"gpus": 4, "gpu": "a100-40gb", "model": "qwen3-14b", "method": "lora", "owned": True}, None),
    ("we're at 50 QPS peak for llama-3.1-8b, 1k in/300 out",
     {"requests": 1440000, "model": "llama-3.1-8b", "prompt": 1024, "output": 300,
      "method": "inference"}, None),
    ("吞吐要求每天100万次调用，qwen3-8b",
     {"requests": 1000000, "model": "qwen3-8b", "method": "inference"}, None),
    ("qwen3-32b 部署 总共32张H20 分4台",
     {"model": "qwen3-32b", "gpus": 32, "gpu": "h20", "method": "inference"}, None),
    ("70B 推理 int8 2台A100",
     {"model": "70B", "quant": "int8", "gpus": 16, "gpu": "a100-80gb", "method": "inference"}, None),
    ("单机八卡4090 qwen3 32b fp16 推理 50路并发",
     {"gpus": 8, "gpu": "rtx-4090", "model": "qwen3-32b", "precision": "fp16", "users": 50,
      "method": "inference"}, None),
    ("rent vs buy for 16 H100s over 2 years, serving llama-3.3-70b",
     {"gpus": 16, "gpu": "h100-sxm", "months": 24, "model": "llama-3.3-70b",
      "method": "inference"}, None),
]

# a fourth round: should we, is it possible, any chance, how many users, servers x cards
SWEEP_4: list[tuple[str, dict[str, Any], str | None]] = [
    ("should we buy H20s or rent H100s for deepseek-v3 serving?",
     {"model": "deepseek-v3", "method": "inference"}, None),
    ("Would 4 L40S be enough to serve qwen3-32b for our team of 30?",
     {"gpus": 4, "gpu": "l40s", "model": "qwen3-32b", "method": "inference", "requests": 141}, "fits"),
    ("is it possible to fine-tune llama-3.1-70b with LoRA on 2 A100s",
     {"model": "llama-3.1-70b", "gpus": 2, "gpu": "a100-80gb", "method": "lora"}, "fits"),
    ("what's the minimum number of 4090s for qwen2.5-72b at 4-bit?",
     {"gpu": "rtx-4090", "model": "qwen2.5-72b", "quant": "int4", "method": "inference"}, "fewest"),
    ("how many concurrent users can 8 H20 handle with deepseek r1?",
     {"gpus": 8, "gpu": "h20", "model": "deepseek-r1", "method": "inference"}, "capacity"),
    ("can our 2 x 8 A800 cluster pretrain a 7B on 500B tokens in a month",
     {"gpus": 16, "gpu": "a800", "model": "7B", "tokens": 500000000000, "days": 30.0,
      "method": "pretrain"}, None),
    ("any chance qwen3-235b-a22b runs on 4 H200?",
     {"model": "qwen3-235b-a22b", "gpus": 4, "gpu": "h200", "method": "inference"}, "fits"),
    ("8张4090能撑多少并发 qwen3-32b",
     {"gpus": 8, "gpu": "rtx-4090", "model": "qwen3-32b", "method": "inference"}, "capacity"),
    ("32B的模型最少要几张4090才能跑",
     {"model": "32B", "gpu": "rtx-4090", "method": "inference"}, "fewest"),
    ("4张A100 80G 能全参微调多大的模型",
     {"gpus": 4, "gpu": "a100-80gb", "method": "full-finetune"}, None),
    ("我们打算买4台服务器，每台8张H20，跑deepseek满血，能支持多少用户",
     {"mode": "buy", "gpus": 32, "gpu": "h20", "model": "deepseek-r1", "method": "inference"}, "capacity"),
    ("这个配置够吗：qwen3-32b，8卡4090，上下文32k，并发20",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "context": 32768, "users": 20,
      "method": "inference"}, "fits"),
    ("qwen3-32b用vllm部署，tp=4，4张4090",
     {"model": "qwen3-32b", "engine": "vllm", "gpus": 4, "gpu": "rtx-4090",
      "method": "inference", "tp": 4}, None),
    ("有没有必要上H200？qwen3-235b 推理 50并发",
     {"gpu": "h200", "model": "qwen3-235b-a22b", "users": 50, "method": "inference"}, None),
    ("预算一百五十万，国内，部署Qwen3-235B-A22B，并发64",
     {"budget": {"amount": 1500000.0, "currency": "CNY"}, "market": "china",
      "model": "qwen3-235b-a22b", "users": 64, "method": "inference"}, None),
    ("ollama跑qwen3:8b，笔记本4060 8G够吗",
     {"engine": "llama.cpp", "model": "qwen3-8b", "method": "inference", "card_memory": 8.0},
     "fits"),
    ("同时在线500人，每人每天问20个问题，qwen3-32b",
     {"users": 500, "model": "qwen3-32b", "method": "inference"}, None),
    ("we expect 2000 employees, maybe 5% online at once, llama-3.3-70b",
     {"users": 100, "model": "llama-3.3-70b", "method": "inference"}, None),
]

# a fifth round: full-width, typos, Ollama tags, release dates, nicknames
SWEEP_5: list[tuple[str, dict[str, Any], str | None]] = [
    ("ｑｗｅｎ３－３２ｂ　推理　８张４０９０　并发５０",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "users": 50, "method": "inference"}, None),
    ("qwen3-32b 推里 8张4090 并发50",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "users": 50, "method": "inference"}, None),
    ("dpsk r1 部署 16张h20",
     {"model": "deepseek-r1", "gpus": 16, "gpu": "h20", "method": "inference"}, None),
    ("deepseek-r1:671b 部署需要几张 H20 (96G)",
     {"model": "deepseek-r1", "gpu": "h20", "method": "inference"}, "fewest"),
    ("llama3.1:70b on two 48GB cards?",
     {"model": "llama-3.1-70b", "gpus": 2, "card_memory": 48.0, "method": "inference"}, None),
    ("我想跑个 72b 的，4 卡 L20 行吗",
     {"model": "72B", "gpus": 4, "gpu": "l20", "method": "inference"}, "fits"),
    ("qwen3_32b serve, 8×RTX4090, ctx 32k",
     {"model": "qwen3-32b", "gpus": 8, "gpu": "rtx-4090", "context": 32768,
      "method": "inference"}, None),
    ("帮我评估下 glm4.5 air 部署 2张H20",
     {"model": "glm-4.5-air", "gpus": 2, "gpu": "h20", "method": "inference"}, None),
    ("Qwen3-Next 80B 推理 4卡H100",
     {"model": "80B", "gpus": 4, "gpu": "h100-sxm", "method": "inference"}, None),
    ("DeepSeek-V3-0324 部署 8卡H200",
     {"model": "deepseek-v3", "gpus": 8, "gpu": "h200", "method": "inference"}, None),
    ("kimi-k2-instruct 部署 两台 8×H200",
     {"model": "kimi-k2", "gpus": 16, "gpu": "h200", "method": "inference"}, None),
    ("Qwen3-32B-AWQ on a single 4090 with 16k context, 10 users?",
     {"model": "qwen3-32b", "quant": "awq", "gpus": 1, "gpu": "rtx-4090", "context": 16384,
      "users": 10, "method": "inference"}, None),
    ("llama-3.1-8b-instruct q4_k_m on a 3060 12GB",
     {"model": "llama-3.1-8b", "quant": "q4_k_m", "method": "inference", "gpu": "rtx-3060-12gb",
      "gpus": 1}, None),
    ("Llama-3.3-70B-Instruct FP8 2xH100 serving 32 concurrent at 8k",
     {"model": "llama-3.3-70b", "quant": "fp8", "gpus": 2, "gpu": "h100-sxm", "users": 32,
      "context": 8192, "method": "inference"}, None),
]

KNOWN_GAPS = {
    "qwen3-4b 在手机上？不，部署在一张T4上": {"手机", "不"},
    "renting 8 H100s for a week to LoRA llama 3.1 70b, how much?": {"week"},  # a rental term
    "预算50万以内，部署一个32B的模型给客服用，日活2000": {"客服"},  # who uses it, no count
    "老板问：32b的模型部署给100个人用要花多少钱": {"老板问"},
    "我们预算只有20w，想本地部署一个能用的大模型，日活500左右": {"大"},  # no model: asked for
    "can a mac studio run 70b? no — can 2x A6000 run llama-3.3-70b at 4bit": {"mac", "studio", "no"},
    "下个月要上线qwen3-32b客服，并发大概80，买还是租": {"客服"},
    "llama 3.2 3b on an RTX 4060?": {"RTX"},  # no RTX 4060 in the catalog
    "ollama跑qwen3:8b，笔记本4060 8G够吗": {"笔记本"},  # a laptop 4060: not in the catalog
    "同时在线500人，每人每天问20个问题，qwen3-32b": {"每人", "问", "问题"},  # users given; a rate apart
    "qwen3-32b 推里 8张4090 并发50": {"推里"},  # a typo: noted with the keyword it resembles
    "Qwen3-Next 80B 推理 4卡H100": {"Qwen3-Next"},  # not in the catalog: its size is read
}


def test_the_sweep_is_big_and_mixed() -> None:
    texts = [text for text, _slots, _question in SWEEP]
    assert len(texts) >= 80 and len(set(texts)) == len(texts)
    assert sum(any("\u3400" <= c <= "\u9fff" for c in t) for t in texts) >= 40
    assert sum(t.isascii() for t in texts) >= 20


ALL_ROUNDS = SWEEP + SWEEP_2 + SWEEP_3 + SWEEP_4 + SWEEP_5


@pytest.mark.parametrize(("text", "want", "question"), ALL_ROUNDS, ids=[row[0][:40] for row in ALL_ROUNDS])
def test_every_sweep_question_reads_its_slots(text: str, want: dict[str, Any],
                                              question: str | None) -> None:
    reading = read(text)
    assert slots(text) == want
    assert reading.question == question
    assert set(reading.skipped) == KNOWN_GAPS.get(text, set())


# -- the rules the sweep asked for ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "key", "value"), [
    ("qwen3-32b 部署 30-50人同时在线", "users", 50),
    ("qwen3-32b 部署 并发 20~40", "users", 40),
    ("70B 推理 预算2-3万", "budget", {"amount": 30000.0, "currency": "CNY"}),
    ("7B 预训练 100B tokens 1到2周内", "days", 14.0),
    ("serve qwen3-8b to 30 to 50 users", "users", 50),
])
def test_a_range_is_sized_for_its_upper_end(text: str, key: str, value: Any) -> None:
    reading = read(text)
    assert reading.values[key] == value
    assert any("upper end" in note for note in reading.notes)


def test_a_share_online_at_once_scales_the_head_count() -> None:
    assert slots("部署qwen3-32b给500人的公司用，同时在线大概10%")["users"] == 50
    assert slots("qwen3-8b for 300 employees, 5% concurrent")["users"] == 15
    alone = read("qwen3-8b 部署 同时在线10%")
    assert "users" not in alone.values and any("10%" in note for note in alone.notes)


@pytest.mark.parametrize("text", ["70B模型推理，用L20还是H20？并发100",
                                  "H100 vs H200 for llama-3.1-70b inference",
                                  "llama-3.1-8b lora: 4090 or A6000?"])
def test_two_cards_asked_against_each_other_are_compared_not_pinned(text: str) -> None:
    reading = read(text)
    assert "gpu" not in reading.values
    assert any("compared" in note for note in reading.notes)


@pytest.mark.parametrize(("text", "want"), [
    ("ds v3 推理", {"model": "deepseek-v3", "method": "inference"}),
    ("ds-r1 部署", {"model": "deepseek-r1", "method": "inference"}),
    ("qwen2.5-72b-instruct-awq serve", {"model": "qwen2.5-72b", "quant": "awq", "method": "inference"}),
    ("gemma-2-9b-it lora", {"model": "gemma-2-9b", "method": "lora"}),
    ("llama3-70b-instruct serve", {"model": "llama-3-70b", "method": "inference"}),
    ("Qwen3-32B-FP8 推理", {"model": "qwen3-32b", "quant": "fp8", "method": "inference"}),
])
def test_nicknames_and_repo_suffixes(text: str, want: dict[str, Any]) -> None:
    assert slots(text) == want


def test_a_thread_reply_reads_the_same_rules() -> None:
    assert slots("并发改成30-50", reply=True) == {"users": 50}
    assert slots("换成一张L4", reply=True) == {"gpus": 1, "gpu": "l4"}


def test_an_average_rate_is_the_days_not_the_peaks() -> None:
    reading = read("qwen2.5-7b serve 50 RPS avg")
    assert reading.values["requests"] == round(50 * traffic.SECONDS_PER_DAY)
    assert reading.traffic is not None and "average" in reading.traffic
    assert read("qwen3-8b 平均每秒10个请求").values["requests"] == round(10 * traffic.SECONDS_PER_DAY)


@pytest.mark.parametrize(("text", "key", "value"), [
    ("qwen3-30b-a3b QPS=10", "requests", round(10 * AT_PEAK)),
    ("qwen3-8b dau=5000", "requests", round(5000 * DAILY)),
    ("Yi 34B 推理", "model", "yi-1.5-34b"),
    ("qwen-72b 推理", "model", "qwen2.5-72b"),
    ("qwen3-8b LoRA rank 64 序列长度 16k", "seq", 16384),
    ("kimi k2 部署 8卡H200两台", "gpus", 16),
    ("LoRA qwen3-8b, 8k seqs", "seq", 8192),
])
def test_second_round_rules(text: str, key: str, value: Any) -> None:
    assert read(text).values[key] == value


def test_a_family_and_size_the_catalog_has_several_times_stays_a_size() -> None:
    assert slots("llama 70b 推理")["model"] == "70B"  # Llama 2, 3, 3.1 and 3.3 have a 70B


@pytest.mark.parametrize(("text", "key", "value"), [
    ("train a 13B lora in under 48 hours on 500M tokens", "days", 2.0),
    ("7B LoRA 1亿token 48小时内", "days", 2.0),
    ("qwen3-32b 每天8小时 推理", "hours", 243),  # hours of use a day stay hours of use
    ("rent vs buy for 16 H100s over 2 years, serving llama-3.3-70b", "months", 24),
    ("Qwen3-8B LoRA, max_len 4096", "seq", 4096),
    ("gpt-oss-20b on 2 L4s", "gpus", 2),
    ("qwen3-32b 首 token 延迟 < 800ms", "ttft", 0.8),
    ("qwen3-32b 部署 总共16张4090 分4台", "gpus", 16),
])
def test_third_round_rules(text: str, key: str, value: Any) -> None:
    assert read(text).values[key] == value


def test_two_cards_each_with_its_verb() -> None:
    both = read("should we buy H20s or rent H100s for deepseek-v3 serving?")
    assert "gpu" not in both.values and "mode" not in both.values  # buying against renting: both
    assert read("70b 推理 租4090还是租A800").values["mode"] == "rent"


def test_a_card_then_a_count_is_no_range() -> None:
    reading = read("qwen3-32b serve with 4x 3090 to 50 people")
    assert slots("qwen3-32b serve with 4x 3090 to 50 people") == {
        "model": "qwen3-32b", "method": "inference", "gpus": 4, "gpu": "rtx-3090", "users": 50}
    assert not any("upper end" in note for note in reading.notes)


@pytest.mark.parametrize("text", ["I have used it for a year", "ok 50% of us agree", "qps is fine",
                                  "we talked about this over 2 months ago", "the dau dashboard is down",
                                  "how long did that take?", "is it possible to get the PDF?"])
def test_chatter_with_the_new_words_is_not_read(text: str) -> None:
    assert not has_slot(text)


def test_a_peak_rate_with_a_peak_factor_given_holds_the_rate_said() -> None:
    values = read("qwen3-32b QPS 20 peak=5").values
    req = Request(model="qwen3-32b", method="inference", requests=values["requests"], peak=values["peak"])
    load = traffic.load_of(req)
    assert load is not None and load.peak_rate == pytest.approx(20, rel=1e-4)


@pytest.mark.parametrize(("text", "method"), [
    ("llama-3.1-8b q4_k_m on a laptop", "inference"),  # a GGUF k-quant: only a serving engine loads it
    ("qwen2.5-7b awq", "inference"),
    ("qwen3-8b vllm", "inference"),
    ("13B nf4", None),  # NF4 is QLoRA's as much as serving's: no method assumed
])
def test_a_serving_only_format_or_engine_says_serving(text: str, method: str | None) -> None:
    assert read(text).values.get("method") == method
