"""The Chinese phrase table: what Chinese teams type, into the grammar's tokens.

`qwen2.5-72b 推理 100并发 上下文32k` -> `qwen2.5-72b inference users=100 context=32k`. The rows
feed the same key table as the English ones (engine/en_input.py) and read numbers and units the
same way (engine/numbers.py: 万, 千, 亿, k, M, B, T, 两/双/单, full-width digits). Covered:
methods (engine/methods.py zh_aliases, and 微调 alone as a full fine-tune), budgets (预算15万,
预算不超过2万美元, 120万元), counts and cards (4张4090, 单卡, 双卡4090, 8卡A800, 两台8卡H800 =
16 cards, 2机16卡, 4×4090), users (100并发, 并发数100, 100个用户, 同时在线200人), context and
sequence lengths (上下文32k, 序列长度8k), 批大小, training tokens (1T tokens, 1万亿token), hours
(每月200小时, 每天8小时), 4bit / 4位 / int4 / 量化到8bit, 满血版 (the full model) and 蒸馏版 (the
R1 distills), 租用/购置 (mode=rent / mode=buy), and the question words themselves
(显存多大, 多少张卡, 要几台), which ask what every answer says and so read as nothing.
Words no row knows stay, apart from ASCII, for the grammar to name in its error.
"""

from __future__ import annotations

import re

from engine import datasize, numbers
from engine.methods import METHOD_WORDS
from engine.methods import METHODS as METHOD_TABLE
from engine.phrases import (
    CARD,
    SERVER_GPUS,
    Phrase,
    Rewrite,
    card_name,
    cards,
    distill,
    has_cjk,
    keyed,
    number,
    words,
)

# a number and its scale; a unit is never backed off from (上下文32k 并发32: not context=32)
N = rf"(?P<n>{numbers.NUMBER})\s*(?P<u>{numbers.CN_SCALE}|[kmbt](?![a-z]))?(?(u)|(?![kmbt万亿千百十]))"
# a count of cards or servers; never the digits of a card's name (A100卡, 4090卡)
COUNT = r"(?P<n>(?<![a-z0-9.])\d{1,3}(?!\d)|[一二两三四五六七八九十单双]{1,3})"
# 上下文是32k, 并发数=100; in a thread, 上下文长度改成32k, 并发调到50
CHANGE = (r"改成|改为|改到|换成|设为|设成|调到|调成|调整为|调整到|加到|增加到|提到|提高到|升到|降到|减到|"
          r"减少到|变成")
SAY = r"\s*(?:是|为|设为|设成|要|有|在|大概|大约|约|:|=)?\s*"
END = r"(?![a-z0-9.])"  # a size or count ends here (32B部署: Chinese follows, that is fine)
NOT_BITS = r"(?!\s*-?\s*(?:bits?|比特))"  # 上下文4bit: the 4 is the format's width
# 4k序列两周内: a number a counter or a time word follows is that word's, not the keyword's
# (并发 claims it only when no number of its own follows: 上下文32k并发32 is context 32k)
NOT_COUNTED = (r"(?!(?:个)?(?:天|周|星期|礼拜|个月|张|块|卡|台|秒|小时|次|预算|元|[万亿千百]|"
               r"(?:并发|人|用户|路)(?![数量]?\s*[\d一二两三四五六七八九十])))")
MONEY = (rf"(?P<sym>[$¥])?\s*(?P<n>{numbers.NUMBER})\s*(?P<u>{numbers.CN_SCALE}|[km](?![a-z]))?"
         r"(?![万亿千百十])"
         r"\s*(?P<cur>元|块钱|块|人民币|rmb|cny|美元|美金|刀|usd)?"
         # a bare number is no amount when a size or a counter follows: 预算 70B, 预算 10天之内
         r"(?(u)|(?(cur)|(?![a-z0-9.万亿千百十]|\s*(?:天|周|个|张|块|卡|台|人|秒|小时|次|位|路|并发|tokens?))))")
MONEY_CN = MONEY.replace(r"|[km](?![a-z]))?", ")")  # an amount in 万 or 亿: money wherever it stands
BUDGET_WORD = (r"(?:总|月|每月|每个月)?预算\s*(?:上限)?\s*(?:每月|每个月|一个月)?\s*"
               r"(?:只有|仅有|就|只|大概只有)?\s*"
               r"(?:是|为|在|有|大概|大约|约|控制在|不超过|不超|不高于|最多|:|=)?\s*")
USD = ("$", "美元", "美金", "刀", "usd")
# 两百万预算 4k序列, 上下文32k预算30万: a number that belongs to the word on its other side
OTHER_NUMBER_AFTER = r"(?(cur)|(?!序列|上下文|tokens?|张|卡|台|人|天|周|个月|秒))"
OTHER_NUMBER_BEFORE = "".join(f"(?<!{w})" for w in ("上下文", "序列", "长度", "并发", "并发数", "窗口"))
# model families by their Chinese names (before any row: 千 and 万 in them are not numbers)
NAMES = {"通义千问": "qwen", "千问": "qwen", "百川": "baichuan", "书生浦语": "internlm", "浦语": "internlm",
         "深度求索": "deepseek", "零一万物": "yi"}


def _count(m: re.Match[str], group: str = "n") -> int | None:
    value = numbers.to_number(m.group(group) or "")
    return int(value) if value is not None and value == int(value) and value > 0 else None


def _money(m: re.Match[str], *, needs_unit: bool = False) -> str | None:
    """An amount: 15万 -> 150000cny (万 and 亿 are yuan unless a dollar word says otherwise),
    2万美元 -> 20000usd, 300k -> 300k, 5000元 -> 5000cny; a bare number keeps no currency, so
    the key table can ask about an implausibly small one."""
    unit, sym, cur = m.group("u") or "", m.group("sym") or "", (m.group("cur") or "").lower()
    if needs_unit and not (unit in numbers.CN_SCALES or sym or cur):
        return None
    amount = numbers.value(m.group("n"), unit)
    if amount is None:
        return None
    currency = ("usd" if sym in USD or cur in USD
                else "cny" if sym or cur or unit in numbers.CN_SCALES else "")
    return amount + currency


def _budget(regex: str, example: str, *, needs_unit: bool = False) -> Phrase:
    def emit(m: re.Match[str], _kept: list[str]) -> str | None:
        got = _money(m, needs_unit=needs_unit)
        return None if got is None else f"budget={got}"
    return Phrase(regex, emit, example)


def _servers(m: re.Match[str], _kept: list[str]) -> str | None:
    """一台 = a server of 8; 两台8卡H800 = 16; 2机16卡 = 16 in all (more than a server holds is
    a total), 2机8卡 = 16; 单机 alone says only "not distributed" and reads as nothing."""
    servers, per = _count(m, "s"), _count(m, "n") if m.group("n") else None
    if servers is None:
        return None
    if per is None and m.group("unit") == "机" and servers == 1:
        return cards(None, m) if m.group("card") else ""
    if per is not None and m.group("unit") == "机" and per > SERVER_GPUS:
        total = per
    else:
        total = servers * (per or SERVER_GPUS)
    return cards(total, m)


# a data set's word and what one sample is (engine/datasize.py)
DATA_WORD = r"(?:训练数据|训练集|数据集|数据量|数据|语料|样本量|样本数|样本)"
SAMPLE_NOUN = r"(?:训练数据|数据|对话|样本|指令|问答对?|语料|qa|sft数据)"
BYTES = r"(?P<n>(?<![a-z0-9.])\d+(?:\.\d+)?)\s*(?P<b>[kmgt]b?)(?![a-z])"




def _hours_a_day(m: re.Match[str]) -> str | None:
    value = numbers.to_number(m.group("n"))
    if value is None or not 0 < value <= 24:
        return None
    return f"{float(value) * 730 / 24:.0f}"  # a 730-hour month of days


def _years(m: re.Match[str]) -> str | None:
    value = numbers.to_number(m.group("n"))
    return f"{int(value * 12)}" if value is not None and 0 < value <= 10 else None


def _fine_tune(m: re.Match[str], kept: list[str]) -> str:
    # 微调 alone is a full fine-tune; with a method named anywhere (LoRA微调, 用 QLoRA 微调,
    # 微调 用 LoRA) it only repeats that method
    said = {w.lower() for w in re.findall(r"[a-z][a-z0-9-]*", m.string, re.IGNORECASE)}
    return "" if any(t in METHOD_WORDS for t in (*kept, *said)) else "full-finetune"


CITIES = {"北京": "beijing", "上海": "shanghai", "深圳": "shenzhen", "广州": "guangzhou",
          "成都": "chengdu", "杭州": "hangzhou", "南京": "nanjing", "苏州": "suzhou", "江苏": "jiangsu",
          "武汉": "wuhan", "西安": "xian", "重庆": "chongqing", "天津": "tianjin", "合肥": "hefei",
          "贵州": "guizhou", "贵阳": "guiyang", "宁夏": "ningxia", "中卫": "zhongwei",
          "内蒙古": "inner-mongolia", "乌兰察布": "ulanqab", "庆阳": "qingyang", "甘肃": "gansu",
          "青岛": "qingdao", "济南": "jinan", "厦门": "xiamen", "长沙": "changsha", "郑州": "zhengzhou"}
DAYS_PER = {"小时": 1 / 24, "天": 1, "周": 7, "星期": 7, "礼拜": 7, "个月": 30}  # a month of 30 days


def _ttft(m: re.Match[str]) -> str | None:
    value = numbers.to_number(m.group("n"))
    if value is None or value <= 0:
        return None
    unit = "ms" if m.group("t").lower() in ("毫秒", "ms") else ""
    return f"ttft={numbers.plain(value)}{unit}"


def _deadline(m: re.Match[str]) -> str | None:
    value = numbers.to_number(m.group("n"))
    if value is None or value <= 0:
        return None
    return f"days={numbers.plain(value * DAYS_PER[m.group('unit')])}"


def _region(m: re.Match[str]) -> str:
    return f"region={CITIES[m.group('city')]}"


def _aliases() -> str:
    """Every method's Chinese phrasings, longest first, spaces allowed between ASCII and Chinese
    (LoRA 微调)."""
    pairs = sorted(((a, m.name) for m in METHOD_TABLE.values() for a in m.zh_aliases),
                   key=lambda pair: -len(pair[0]))
    def spaced(alias: str) -> str:
        out = ""
        for before, c in zip(" " + alias, alias, strict=False):
            out += (r"\s*" if before.isascii() and before.isalpha() and not c.isascii() else "")
            out += re.escape(c)
        return out
    return "|".join(spaced(a) for a, _name in pairs)


def _method(m: re.Match[str], _kept: list[str]) -> str:
    said = re.sub(r"\s+", "", m.group(0)).lower()
    return next(spec.name for spec in METHOD_TABLE.values()
                if said in (a.lower() for a in spec.zh_aliases))



def _attached(keyword: str, key: str, example: str, *, number_first: bool = False,
              after: str = "") -> tuple[Phrase, Phrase]:
    """A number said with its word (上下文32k, 100并发) as two rows: one with nothing between
    them, one allowing spaces. All tight rows run before any loose one, so in `上下文 8k 20并发`
    the 20 goes with 并发, and in `并发20 上下文8k` with 并发 too."""
    rows = []
    for gap, say in (("", SAY.replace(r"\s*", "")), (r"\s*", SAY)):
        regex = (N + gap + after + keyword if number_first
                 else keyword + say + N + NOT_BITS + (after.replace(r"\s*", gap) or NOT_COUNTED))
        rows.append(keyed(regex, key, _length, example))
    return rows[0], rows[1]


def _length(m: re.Match[str]) -> str | None:
    """A length or a count; never a size with B or T (上下文 70B: 70B is the model)."""
    return None if (m.group("u") or "").lower() in ("b", "t") else number(m)


# who a head count is (engine/rates.py: not concurrent users)
HEAD_COUNT = (r"(?:员工账号|员工|同事|同学|坐席|开发者?|开发人员|工程师|程序员|研发人员|研发|研究员|"
              r"老师|学生|医生|律师|"
              r"客服|销售|账号|席位)")
_USERS = (r"(?:最大)?(?:并发数|并发量|并发用户数?|并发请求数?|并发|同时在线(?:用户数?|人数)?|在线用户数?|"
          r"用户数|同时使用人数|同时访问人数)")
_ATTACHED = (
    _attached(r"(?:最大)?(?:上下文|context)\s*(?:长度|窗口)?", "context", "上下文32k"),
    _attached(r"(?:的)?\s*(?:上下文|context)\s*(?:长度|窗口)?", "context", "32k上下文", number_first=True),
    _attached(r"(?:训练)?(?:序列长度|序列长|最大序列长度|截断长度|样本长度|最大长度|训练长度|文本长度|序列)",
              "seq", "序列长度8k"),
    _attached(r"(?:的)?\s*(?:序列长度|序列)", "seq", "8k序列", number_first=True),
    _attached(r"(?:每卡)?(?:批大小|批次大小|批量大小|批处理大小|微批|批量|批次)", "batch", "批大小4"),
    # users: 同时100人在线, 100并发, 并发数100, 100个用户, 同时在线200人
    _attached(r"同时\s*(?:有)?\s*", "users", "同时100人在线",
              after=r"\s*(?:个|人)?\s*(?:用户|人)?\s*(?:在线|使用|访问|请求)"),
    _attached(r"(?:并发(?:用户|请求|数)?|用户同时在线|人同时在线|同时在线|人在线|在线用户|用户|人使用|人用|"
              r"请求并发)", "users", "100并发", number_first=True, after=r"(?:个|路|人|位)?\s*"),
    _attached(_USERS, "users", "并发数100", after=r"\s*(?:个|人|路|位)?\s*(?:用户|请求)?"),
)
TIGHT_THEN_LOOSE = tuple(pair[0] for pair in _ATTACHED) + tuple(pair[1] for pair in _ATTACHED)

QUESTIONS = (  # what every answer says: the question itself reads as nothing
    r"(?:需要|要|得|用)?(?:多少|几)\s*(?:张|块|个)?\s*(?:显卡|卡|gpu)",
    r"(?:需要|要|得)?(?:多少|几)\s*台\s*(?:服务器|机器)?",
    r"(?:需要|要|得|用)?(?:多少|几)\s*(?:张|块|个)\s*(?=[a-z0-9])",  # 几张 A100: the card stays
    r"显存\s*(?:要|需要|占用?|得)?\s*多[大少]", r"(?:需要|要|占|占用|得)?\s*多[大少]\s*(?:的)?显存",
    r"(?:训练|要|需要)?\s*多少\s*[kmbt]?\s*(?:个)?\s*tokens?",
    r"(?:要|需要|得)?花多少钱?|多少钱|什么价|价格多少|成本多少",
    r"什么配置|啥配置|怎么配|如何配置|怎么选|选什么|选哪个|哪张卡|哪种卡|什么卡|什么显卡",
    r"够不够|够吗|够用吗|能跑吗|能不能跑|跑得动吗|跑得起来吗|可以吗|行吗|可行吗|行不行|能不能|能否|"
    r"放得下吗?|装得下吗?|撑得住吗?|扛得住吗?|跑不跑得动|(?:能|可以)?(?:服务|支持|撑|扛|承受|承载|带)(?:得住)?(?:多少|几个)(?:人|用户|并发|路)?|"
    r"最少|至少|最多能|几张|几块|多少张|多少块|几台|多少台",
    r"要多久|多长时间|需要多久|多快|速度如何|速度怎么样",
    r"租(?:用|卡)?还是(?:买|购置|购买)(?:卡)?(?:划算|合适|好)?|(?:买|购置|购买)(?:卡)?还是租(?:用|卡)?(?:划算|合适|好)?",
    # 从头预训练: 预训练 says it (从头训练 and 从零训练 alone are pretraining, in the method row)
    r"(?:从头|从零)(?:开始)?(?=\s*预训练)",
    r"(?:手上|手里|手头|现在|目前)\s*(?:有|已有|已经有)",  # 手上有8张4090: the cards are what follows
    r"求推荐|推荐一下|帮我算一下|帮忙算一下|帮我算下|帮我算|算一下|算下|估算一下|估一下|请问|想问一下|问一下|"
    r"帮忙看一?下|帮忙看看|帮我看一?下|帮我看看|帮看下|看一?下",
    r"(?:更|比较|哪个)?(?:划算|合算|值得|值不值)(?:吗|些|点|一些)?",
)
FILLER = ("需要", "多少", "怎么", "什么", "配置", "服务器", "机器", "选型", "方案", "模型", "显存",
          "大概", "大约", "左右", "以内", "之内", "以下", "的", "用", "跑", "做", "吗", "呢", "和",
          "与", "在", "上", "下", "卡型", "训练", "一下", "我们", "我", "想", "要", "打算", "计划",
          "准备", "进行", "来", "给", "帮", "看看", "试试", "换成", "改成", "改为", "换", "如果",
          "那么", "那", "吧", "啊", "了", "每月", "每个月", "每小时", "每天", "环境", "场景",
          "版本", "一个", "个", "可以", "能", "是", "有", "显卡", "整机", "规模", "左右的", "评估",
          "推荐", "按", "全公司", "公司", "团队", "训练完", "训完", "跑完", "完成", "搞定", "只", "同时",
          "吞吐量", "吞吐", "要求", "总共", "一共", "共计", "把", "完", "才能", "才", "这个配置", "这个",
          "这样", "有没有必要", "有没有", "有必要", "必要", "基于", "采用")

# models: the R1 distills by size (read before the catalog's names, so `deepseek-r1 蒸馏版 32B`
# is the distill, not deepseek-r1)
ZH_MODEL_ROWS: tuple[Phrase, ...] = (
    Phrase((r"(?<![a-z0-9.\-_/])(?P<model>[a-z][a-z0-9.\-_/]*)\s*(?:的)?\s*(?:蒸馏版|蒸馏模型|蒸馏)\s*(?:的)?\s*"
                    r"(?P<size>\d+(?:\.\d+)?b)" + END),
           lambda m, _k: distill(m.group("model"), m.group("size")), "deepseek-r1 蒸馏版 32B"),
    Phrase((r"(?<![a-z0-9.\-_/])(?P<model>[a-z][a-z0-9.\-_/]*)\s+(?P<size>\d+(?:\.\d+)?b)\s*(?:的)?\s*"
                    r"(?:蒸馏版|蒸馏模型|蒸馏)"),
           lambda m, _k: distill(m.group("model"), m.group("size")), "deepseek-r1 32B 蒸馏版"),
    Phrase((r"(?<![a-z0-9.\-_/])(?P<model>[a-z][a-z0-9.\-_/]*)\s*(?:的)?\s*(?:蒸馏版|蒸馏模型|蒸馏)"),
           lambda m, _k: distill(m.group("model"), ""), "deepseek-r1 蒸馏版 32B"),
)
ZH_PHRASES: tuple[Phrase, ...] = (
    *ZH_MODEL_ROWS,
    # 用megatron训: 训 alone is training, said by the framework named beside it
    words(r"训(?![练完])", "", "用megatron训"),
    # 满血版: the full model, which the name already is
    words(r"满血版本?|满血|完整版|原版|非量化版", "", "deepseek-r1 满血版 部署"),
    *(words(q, "") for q in QUESTIONS),
    # self-hosting against an API: serving, with the answer's API comparison; not a purchase
    # (自建 alone is buying)
    words(r"(?:自建|自己部署|私有化部署|本地部署)\s*还是\s*(?:调用?|用|接)?\s*api(?:划算|合适|好|更划算)?|"
          r"(?:调用?|用)?\s*api\s*还是\s*(?:自建|自己部署|私有化部署|本地部署)(?:划算|合适|好|更划算)?",
          "inference", "自建还是调API"),
    # methods
    Phrase((_aliases()), _method, "13B 全参微调"),
    Phrase((r"微调"), _fine_tune, "13B 微调"),
    # 总共32张H20 分4台: the servers a total is split over say nothing more (before 两台 = 16)
    words(r"(?:平均)?(?:分|分成|分在|放在)\s*(?:\d{1,3}|[一二两三四五六七八九十]{1,3})\s*台(?:机器|服务器)?(?:上)?",
          "", "分4台"),
    # 4台服务器，每台8张H20: servers, then the cards in each
    Phrase((r"(?P<s>(?<![a-z0-9.])\d{1,3}|[一二两三四五六七八九十]{1,3})\s*台\s*(?:服务器|机器|主机|整机)?\s*"
            r"(?:的)?\s*每台\s*(?:有|配|装|插)?\s*" + COUNT + r"\s*(?:张|块|卡|张卡)\s*(?:" + CARD + r")?"),
           lambda m, _k: cards(_count(m) * _count(m, "s"), m) if _count(m) and _count(m, "s") else None,
           "4台服务器，每台8张H20"),
    # 两台 8×H200: servers of a count of cards written with a times sign
    Phrase((r"(?P<s>(?<![a-z0-9.])\d{1,3}|[一二两三四五六七八九十]{1,3})\s*台\s*(?:服务器|机器|主机|整机)?\s*(?:的)?\s*"
            + COUNT + r"\s*[×x*]\s*" + CARD),
           lambda m, _k: cards(_count(m) * _count(m, "s"), m, known=True)
           if _count(m) and _count(m, "s") else None, "两台 8×H200"),
    # 8卡H200两台: the card count per server first, then the servers
    Phrase((COUNT + r"\s*(?:卡|张卡)\s*" + CARD + r"\s*(?:的)?\s*(?:服务器|机器|整机)?\s*(?:共|一共)?\s*"
            r"(?P<s>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:台|个节点|节点)"),
           lambda m, _k: cards(_count(m) * _count(m, "s"), m, known=True)
           if _count(m) and _count(m, "s") else None, "8卡H200两台"),
    # servers and cards: 两台8卡H800, 2机16卡, 8卡A800, 4张4090, 双卡4090, 4×4090
    Phrase((r"(?P<s>(?<![a-z0-9.])\d{1,3}|[一二两三四五六七八九十单双]{1,3})\s*(?P<unit>台|机)\s*(?:(?P<n>\d+|"
                    r"[一二两三四五六七八九十单双]{1,3})\s*(?:卡|张卡|张|块))?\s*(?:的)?\s*(?:" + CARD +
                    r")?\s*(?:服务器|机器|主机|整机)?"), _servers, "两台8卡H800"),
    Phrase((COUNT + r"\s*(?:张|块|个)\s*(?:显卡|卡|gpu)?\s*(?:" + CARD + r")?"),
           lambda m, _k: cards(_count(m), m, known=True) if m.group("card") or re.search(
               r"卡|gpu", m.group(0), re.I) else None, "4张4090"),
    # 一张L4, 两块T4: a card whose name has one digit (CARD wants two)
    Phrase((COUNT + r"\s*(?:张|块|个)\s*(?P<short>[a-z]\d)(?![a-z0-9])"),
           lambda m, _k: (f"gpus={_count(m)} gpu={card_name(m.group('short'))}"
                          if _count(m) and card_name(m.group("short")) else None), "一张L4"),
    Phrase((COUNT + r"\s*(?:卡|显卡|gpu)\s*(?:" + CARD + r")?"),
           lambda m, _k: cards(_count(m), m, known=True), "8卡A800"),
    Phrase((r"(?P<n>\d+)\s*[×x*]\s*" + CARD),
           lambda m, _k: cards(_count(m), m, known=True), "4×4090"),
    Phrase((CARD + r"\s*[×x*]\s*(?P<n>\d+)" + END),
           lambda m, _k: cards(_count(m), m, known=True), "4090×4"),
    Phrase((CARD + r"\s*" + COUNT + r"\s*(?:张|块|卡)"),
           lambda m, _k: cards(_count(m), m, known=True), "4090两张"),
    # a modified card with its memory: 4090魔改48G
    Phrase((r"(?<![a-z0-9])(?P<card>\d{4}[a-z]?)\s*魔改\s*(?:版)?\s*(?P<mem>\d{2,3})\s*gb?(?![a-z])"),
           lambda m, _k: cards(None, m, known=True), "4090魔改48G"),
    Phrase((CARD + r"\s*(?:显卡|卡|gpu)"), lambda m, _k: cards(None, m, known=True), "4090卡"),
    Phrase((r"(?=魔改|昇腾)" + CARD), lambda m, _k: cards(None, m, known=True), "昇腾910B"),
    # budgets said as budgets: with 万 or 亿 it is money whatever follows (预算200万上下文32k), else
    # not a number a following word claims (两百万预算 4k序列)
    *(_budget(BUDGET_WORD + money + after + r"\s*(?:以内|以下|之内|左右)?", "预算15万")
      for money, after in ((MONEY_CN, r"(?!\s*(?:个|的)?\s*tokens?)"), (MONEY, OTHER_NUMBER_AFTER))),
    # 上下文两百万预算: 万 and 亿 say money wherever the number stands; 上下文32k预算: 32k is a length
    _budget(MONEY_CN + r"\s*(?:以内|以下|之内|左右)?\s*(?:的)?\s*(?:总|月)?预算", "两百万预算"),
    _budget(OTHER_NUMBER_BEFORE + MONEY + r"\s*(?:以内|以下|之内|左右)?\s*(?:的)?\s*(?:总|月)?预算",
            "15万预算"),
    _budget(r"(?:月租|租金|每月租金|租金每月)\s*(?:不超过|不超|最多|控制在)?\s*" + MONEY, "月租2万以内",
            needs_unit=True),
    _budget(r"(?:不超过|不超|不高于|最多|上限|控制在)\s*" + MONEY, "预算不超过15万", needs_unit=True),
    # traffic: 每天1万次请求, 日请求量5000; prompt and answer lengths: 输入2k 输出500
    keyed(r"(?:每天|每日|一天|日均|日)\s*(?:约|大概|大约|有)?\s*" + N + r"\s*(?:次|个|条)?\s*"
          r"(?:请求|调用|访问|查询|问答|对话)", "requests", number, "每天1万次请求"),
    keyed(r"(?:日均|每日|每天|日)\s*(?:请求|调用|访问)\s*(?:量|数|次数)?" + SAY + N, "requests", number,
          "日请求量5000"),
    keyed(r"(?:输入|提示词|提示|prompt)\s*(?:长度)?" + SAY + N + r"\s*(?:个)?\s*(?:tokens?)?", "prompt",
          number, "输入2k"),
    keyed(r"(?:输出|回答|回复|生成)\s*(?:长度)?" + SAY + N + r"\s*(?:个)?\s*(?:tokens?)?", "output",
          number, "输出500"),
    # first token: 首token 2秒内, 首字延迟500毫秒
    Phrase((r"首\s*(?:个)?\s*(?:token|字|词元|包)\s*(?:时间|延迟|时延|响应)?\s*(?:要求|需要|目标)?" + SAY
            + r"(?:不超过|小于|低于|控制在|<=?|≤)?\s*(?P<n>\d+(?:\.\d+)?|[一二两三四五六七八九十]{1,3})\s*"
            r"(?P<t>毫秒|秒|ms(?![a-z])|s(?![a-z]))\s*(?:内|以内|之内)?"),
           lambda m, _k: _ttft(m), "首token 2秒内"),
    # a head count, not users at once (engine/rates.py reads it as traffic): 给200个员工用,
    # 供50位同事使用, 20人的团队, 10人团队, 团队30人, 公司500名员工, 50个开发者
    keyed(r"(?:给|供)?\s*" + N + r"\s*(?:个|位|名)?\s*" + HEAD_COUNT, "people", number, "给200个员工用"),
    keyed(N + r"\s*(?:个)?\s*人\s*(?:的)?\s*(?:小|研发|开发|技术|算法)?\s*"
          r"(?:团队|公司|部门|小组|组|企业|单位)",
          "people", number, "20人的团队"),
    keyed(r"(?:团队|公司|部门|小组|企业)\s*(?:有|共|一共|总共|大概|大约|约)?\s*" + N + r"\s*(?:个|位|名)?\s*"
          r"(?:人|员工)", "people", number, "团队30人"),
    # users said with who they are: 给200个用户用, 供50位客户使用
    keyed(r"(?:给|供)\s*" + N + r"\s*(?:个|位|名)?\s*(?:人|用户|客户)", "users", number, "给200个用户用"),
    # users said with people: 50人同时用, 20个人同时使用
    keyed(N + r"\s*(?:个)?\s*(?:人|用户)\s*(?:同时|一起)\s*(?:用|使用|在线|访问|调用|请求)", "users", number,
          "50人同时用"),
    # 从零开始训练: training from nothing is pretraining, as 从头训练 is
    words(r"(?:从头|从零)\s*开始\s*(?:训练|训)", "pretrain", "从零开始训练"),
    # where the cards are bought or rented (market=): 在国内, 海外
    words(r"(?:在|于)?\s*(?:国内|中国大陆|大陆|中国境内|境内)", "market=china", "在国内"),
    words(r"(?:在)?\s*(?:海外|国外|境外|美国)", "market=global", "海外"),
    # the largest model a box runs: 最大能跑什么模型, 最大能微调多大的模型 (the method word stays)
    words(r"最大\s*(?:的)?\s*模型", "largest", "能跑的最大模型"),
    words(r"最大(?=.{0,12}?(?:什么|多大|哪个|哪些)\s*(?:的)?\s*模型)", "largest", "最大能跑什么模型"),
    words(r"(?:能|可以)?(?:什么|多大|哪个|哪些)\s*(?:的)?\s*模型", ""),
    # where the cards stand: 成都机房, 在成都
    Phrase((r"(?:在|放在|部署在|位于)?\s*(?P<city>" + "|".join(CITIES) + r")\s*(?:的)?\s*"
            r"(?:机房|数据中心|idc|地区|节点|区域|本地)?"), lambda m, _k: _region(m), "成都机房"),
    # deadlines relative to today (engine/deadline.py counts the days): 下个月底, 月底前, 下个月, 年底前, 下周
    words(r"(?:在)?\s*下个?月\s*(?:底|末|内|之内|以内)\s*(?:前|之前|以前)?", "due=next_month_end",
          "下个月底前"),
    words(r"(?:在)?\s*(?:本月|这个月|当月|(?<![每\d个上下])月)\s*(?:底|末)\s*(?:前|之前|以前)?|(?:本月|这个月)\s*(?:内|之内)",
          "due=month_end", "月底前"),
    words(r"(?:在)?\s*下个?月(?![份初中])(?!\s*(?:再|讨论|聊|见|看))", "due=next_month", "下个月"),
    words(r"(?:今年|(?<![每\d个])年)\s*(?:底|末)\s*(?:前|之前|以前)?|今年\s*(?:内|之内)", "due=year_end",
          "年底前"),
    words(r"下\s*(?:个)?\s*(?:周|星期|礼拜)\s*(?:前|之前|以前|内|之内)|(?:在)?\s*下\s*(?:个)?\s*(?:周|星期|礼拜)"
          r"(?![一二三四五六日天])(?=\s*(?:要|得|必须|就要|需要)?\s*(?:完成|上线|交付|跑完|训完|搞定|用上))",
          "due=next_week", "下周前"),
    # host memory (offload to CPU) and card memory without a card's name: 512G内存, 24G显存, 显存24G
    keyed(r"(?P<n>(?<![a-z0-9.])\d{1,4})\s*(?P<t>[gt])b?\s*(?:的)?\s*(?:系统|主机|cpu|服务器)?\s*内存",
          "host_memory",
          datasize.gigabytes, "512G内存"),
    keyed(r"(?:系统|主机|cpu|服务器)?\s*内存\s*(?:有|是|为|:)?\s*(?P<n>\d{1,4})\s*(?P<t>[gt])b?(?![a-z])",
          "host_memory",
          datasize.gigabytes, "内存512G"),
    keyed(r"(?P<n>(?<![a-z0-9.])\d{1,3})\s*(?P<t>g)b?\s*(?:的)?\s*(?:显存|显卡|的卡|卡|gpu)", "card_memory",
          datasize.gigabytes, "24G显存"),
    keyed(r"(?:显存|单卡显存|每张卡)\s*(?:有|是|为|只有|:)?\s*(?P<n>\d{1,3})\s*(?P<t>g)b?(?![a-z])",
          "card_memory",
          datasize.gigabytes, "显存24G"),
    # a data set in samples or bytes (engine/datasize.py turns it into tokens for training):
    # 数据5万条, 5万条数据, 10万条对话, 数据集3GB, 3G的语料; epochs: 训练3轮, 3个epoch
    Phrase(DATA_WORD + r"\s*(?:有|是|为|约|共|大概|大约|:)?\s*" + N
           + r"\s*(?:条|个样本|组|段|份)\s*(?:的)?\s*"
           + SAMPLE_NOUN + "?",
           lambda m, _k: datasize.samples_token(m), "数据5万条"),
    Phrase(N + r"\s*(?:条|个|组|段|份)\s*(?:的)?\s*" + SAMPLE_NOUN,
           lambda m, _k: datasize.samples_token(m), "10万条对话"),
    Phrase(DATA_WORD + r"\s*(?:有|是|为|约|共|大概|大约|大小|:)?\s*" + BYTES,
           lambda m, _k: datasize.bytes_token(m),
           "数据集3GB"),
    Phrase(BYTES + r"\s*(?:的)?\s*(?:训练数据|数据集|数据|语料|文本)",
           lambda m, _k: datasize.bytes_token(m), "3G的语料"),
    Phrase(r"(?:训练|跑|过)?\s*(?P<n>\d{1,3}|[一二两三四五六七八九十])\s*(?:个)?\s*(?:epochs?|轮)(?!\s*对话)",
           lambda m, _k: datasize.epochs_token(m), "训练3轮"),
    # data: 数据量2亿, 语料500亿
    keyed(r"(?:数据量|语料量?|数据集)" + SAY + N + r"(?![万亿千百十a-z0-9.]|\s*(?:tokens?|条|个|份|篇|样本))",
          "tokens", number,
          "数据量2亿"),
    # LoRA rank before the lengths (rank 64 序列长度 16k: 64 is the rank's)
    keyed(r"(?:秩|rank)" + SAY + r"(?P<n>\d+)", "rank", number, "秩64"),
    # lengths, batch and users, each number bound to the word it touches first (below)
    *TIGHT_THEN_LOOSE,
    # training tokens: 1T tokens, 训练100B token, 1万亿token
    keyed(r"(?:训练|数据量?|语料|数据集)?\s*(?:有|是|为|约|共)?\s*" + N + r"\s*(?:个|的)?\s*tokens?",
          "tokens", number, "1T tokens"),
    # users said as people alone when serving (10人, 100个人): not a team's size (20人的小团队,
    # 10人团队), not 人民币
    keyed(N + r"\s*(?:个)?\s*人(?![民工数力])(?!\s*(?:的|小?团|小?组|公司|规模))", "users", number,
          "10人"),
    # hours of use
    keyed(r"(?:每天|一天|每日)\s*(?:使用|跑|运行|用|开)?\s*" + N + r"\s*(?:个)?\s*(?:小时|h)" + END,
          "hours", _hours_a_day, "每天8小时"),
    words(r"7\s*[×x*]\s*24\s*(?:小时)?|全天候?运行|24\s*小时\s*(?:不间断|运行|在线|开机)", "hours=730",
          "7x24小时"),
    keyed(r"(?:每月|每个月|一个月|月)\s*(?:使用|跑|运行|用|开)?\s*" + N + r"\s*(?:个)?\s*(?:小时|h)" + END,
          "hours", number, "每月200小时"),
    # a deadline: 两周内, 一个月内, 14天, 10天之内训完
    Phrase((r"(?<![每一])(?:需要在|要在|在)?\s*(?P<n>\d+|[一二两三四五六七八九十]{1,3})\s*(?:个)?\s*"
            r"(?P<unit>天|周|星期|礼拜|个月)(?![a-z0-9])\s*(?:内|之内|以内|后|以后|之后|完成|跑完|训完|搞定)?"),
           lambda m, _k: _deadline(m), "两周内"),
    # 48小时内: hours only as a deadline (内 or 之内 after it; 每天8小时 is use, read above)
    Phrase((r"(?<![每一])(?:需要在|要在|在)?\s*(?P<n>\d+|[一二两三四五六七八九十]{1,3})\s*(?:个)?\s*"
            r"(?P<unit>小时)\s*(?:内|之内|以内)"), lambda m, _k: _deadline(m), "48小时内"),
    # LoRA rank, headroom, horizon
    keyed(r"(?:预留|留|保留)\s*(?P<n>\d+(?:\.\d+)?)\s*%\s*(?:的)?\s*(?:显存)?\s*(?:余量)?", "headroom",
          lambda m: m.group("n") + "%", "预留20%余量"),
    keyed(r"(?:显存)?余量" + SAY + r"(?P<n>\d+(?:\.\d+)?)\s*%", "headroom", lambda m: m.group("n") + "%",
          "余量20%"),
    words(r"不(?:要|用|需要)?(?:留|预留|保留)?余量", "headroom=0"),
    keyed(r"(?:按|分)?\s*(?:折旧|摊销)?\s*(?:周期|期)?\s*(?P<n>\d+|[一二两三四五六七八九十])\s*年\s*"
          r"(?:折旧|摊销|回本|周期|内)?", "months", _years, "按3年折旧"),
    # formats: 8bit优化器, KV缓存fp8, 量化到4位, 4bit量化, int4
    words(r"8\s*(?:bit|位|比特)\s*(?:的)?\s*(?:adamw?|优化器)|adamw?\s*8\s*(?:bit|位)",
          "optimizer=adamw-8bit", "8bit优化器"),
    words(r"(?:kv\s*cache|kv\s*缓存|kv)\s*(?:用|是|为|量化到|量化为|量化成)?\s*fp8|"
          r"fp8\s*(?:的)?\s*(?:kv\s*cache|kv\s*缓存|kv)", "kv=fp8", "KV缓存fp8"),
    # recipes: offload, recomputation
    words(r"(?:优化器)?(?:cpu\s*offload|offload\s*(?:到)?\s*cpu|卸载到\s*(?:cpu|内存)|offload\s*(?:到)?\s*内存)",
          "offload=optimizer", "优化器卸载到CPU"),
    words(r"(?:不开|关闭|不用|不要)\s*(?:梯度检查点|激活重计算|重计算|gradient\s*checkpointing)",
          "checkpointing=none", "不开重计算"),
    words(r"(?:开启?|打开|用)?\s*(?:梯度检查点|激活重计算|重计算)", "checkpointing=full", "梯度检查点"),
    Phrase((r"(?:量化(?:到|为|成)?\s*)?(?:int)?(?<![0-9])(?P<b>[248])\s*-?\s*(?:bit|位|比特)\s*(?:量化)?"),
           lambda m, _k: f"{m.group('b')}bit", "量化到4位"),
    words(r"量化(?:到|为|成)?\s*(?=[a-z0-9])", "", "量化到int4"),
    words(r"(?<=[a-z0-9])\s*量化(?:版本|版)?", "", "int4量化"),
    # a price per hour is no budget: kept whole, so the grammar names it rather than taking 2元
    Phrase((r"(?:每小时|每卡时|每卡每小时)\s*" + MONEY + r"|"
            + MONEY.replace("?P<", "?P<x").replace("(?(", "(?(x") + r"\s*(?:/|每)\s*(?:小时|h|卡时)"),
           lambda m, _k: re.sub(r"\s+", "", m.group(0))),
    # amounts that can only be money: 15万, 1.2亿, 5000元, $2万
    _budget(MONEY + r"(?(cur)|(?!\s*(?:条|个|份|篇|次|人|位|名|张|块|台|样本|tokens?|字)))", "15万",
            needs_unit=True),  # 1万条数据 is no money
    # only renting or only buying (mode=); 租还是买 asks for both and was read above as the question
    words(r"(?:按小时|按月)?(?:租用|租赁|租卡|租服务器|租机器|租(?!金)|上云|云上)", "mode=rent", "租用"),
    words(r"购置|购买|采购|自购|自建|买卡|买服务器|买", "mode=buy", "购置"),
    # ranking and currency
    words(r"(?:速度|时间|训练速度)优先|最快|越快越好|尽快|最省时", "goal=time", "速度优先"),
    words(r"(?:成本|价格|性价比)优先|最便宜|最省钱|性价比最高|最划算|省钱", "goal=cost", "成本优先"),
    words(r"(?:用|以|按|换成|换算成|显示)?\s*(?:美元|美金)\s*(?:计价|显示|计算|算)?", "currency=USD",
          "用美元计价"),
    words(r"(?:用|以|按|换成|换算成|显示)?\s*人民币\s*(?:计价|显示|计算|算)?", "currency=CNY",
          "人民币计价"),
)

# the words a "did you mean" line can offer for an unknown Chinese word, with an example each
KEYWORDS: dict[str, str] = {
    "并发": "qwen2.5-72b 推理 100并发", "并发数": "qwen2.5-72b 推理 并发数100",
    "同时在线": "qwen2.5-72b 部署 同时在线200人", "用户": "qwen2.5-72b 部署 100个用户",
    "上下文": "32B 推理 上下文32k", "上下文长度": "32B 推理 上下文长度32k",
    "序列长度": "qwen2.5-7b LoRA微调 序列长度8k", "批大小": "7B LoRA微调 批大小4",
    "预算": "13B 全参微调 预算15万", "预算不超过": "70B 推理 预算不超过50万",
    "满血版": "deepseek-r1 满血版 部署", "蒸馏版": "deepseek-r1 蒸馏版 32B 推理",
    "量化到4位": "70B 推理 量化到4位", "4bit": "70B 推理 4bit 双卡4090",
    "单卡": "qwen2.5-7b QLoRA 单卡4090", "双卡": "70B 推理 4bit 双卡4090",
    "两台": "70B 全参微调 两台8卡H800", "一台": "70B 推理 一台8卡A800",
    "张卡": "70B 推理 4张4090", "预训练": "7B 预训练 1T tokens", "tokens": "7B 预训练 1T tokens",
    "每月": "13B LoRA 每月200小时", "每天": "13B LoRA 每天8小时", "租用": "70B 推理 租用",
    "购置": "70B 推理 购置", "速度优先": "13B LoRA 速度优先", "美元": "13B LoRA 用美元计价",
    "秩": "7B LoRA 秩64", "余量": "13B LoRA 预留20%余量",
    **{a: f"13B {a}" for m in METHOD_TABLE.values() for a in m.zh_aliases},
}


def to_grammar(text: str) -> str:
    """Chinese phrasings into grammar tokens (text without Chinese comes back NFKC-normalised);
    engine/parse.py runs this table and the English one together."""
    return rewrite(Rewrite(text)).result()


def rewrite(rw: Rewrite) -> Rewrite:
    """Run the Chinese table over a text being rewritten (only when it has Chinese in it)."""
    if not has_cjk(rw.text) and "×" not in rw.text:
        return rw
    for name, family in NAMES.items():
        rw.text = rw.text.replace(name, f" {family}")  # 上下文8k千问3: 8k, then qwen3
    rw.text = re.sub(r"[，。、？！：；（）“”《》【】?!,;]", " ", rw.text)
    # 输入2000token: a count glued to "token" (the number rows keep k/m/b/t for scales)
    rw.text = re.sub(r"(?<=\d)(?=tokens?\b)", " ", rw.text, flags=re.IGNORECASE)
    # a change said in a thread (改成, 调到, 加到) reads as 是: one pass here rather than a longer
    # pattern in every row (compiling the table is most of a Chinese command's start-up)
    rw.text = re.sub(rf"(?<!微)(?:{CHANGE})", "是", rw.text)  # not 微调成都机房
    rw.squeeze()
    rw.run(ZH_PHRASES)
    for word in sorted(FILLER, key=len, reverse=True):
        rw.text = rw.text.replace(word, " ")
    rw.squeeze()
    # words no row knew stay, apart from ASCII ones (换成QLoRA -> 换成 QLoRA)
    rw.text = re.sub(r"([\u3400-\u9fff])([A-Za-z0-9])", r"\1 \2", rw.text)
    rw.text = re.sub(r"([A-Za-z0-9])([\u3400-\u9fff])", r"\1 \2", rw.text)
    return rw
