"""Training data for the ticket intent router, generated from templates with a seeded RNG.

    python3 models/intent-router/generate.py [--seed 20261130] [--out models/intent-router/train.jsonl]

English and Chinese customer tickets composed as prefix + core phrasing + suffix, with slot values
(order ids O-########, invoices INV-####-####, expense claims EC-######, e-mails, service names,
ISO and Chinese dates) drawn at random. `unknown` covers off-domain requests: weather, jokes, trivia,
coding questions (including ones that mention orders or invoices), recipes, other languages' chit-chat,
gibberish. The held-out evaluation set (eval.jsonl) is hand-written separately and never read here.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import OTHER_LANG, Example, Gen, generate_examples, generator_main, random_prose  # noqa: E402

LABELS = ["order_status", "refund_request", "invoice_copy", "account_access", "outage_report", "expense_claim_status", "unknown"]
PER_LABEL = 1200
DEFAULT_SEED = 20261130

SERVICES = ["payments", "checkout", "search", "login", "api", "notifications", "webhooks", "dashboard", "reporting", "auth"]
SERVICES_ZH = ["支付", "结账", "搜索", "登录", "接口", "通知", "回调", "后台", "报表", "下单"]
NAMES = ["alice", "bob", "chen.wei", "m.garcia", "ops", "finance", "li.lei", "zhang.min", "j.smith", "accounting", "tom"]
DOMAINS = ["example.com", "acme.io", "corp.cn", "mail.example.org", "company.net", "qq.com", "163.com"]


def order_id(g: Gen) -> str:
    return f"O-{g.digits(8)}"


def invoice_no(g: Gen) -> str:
    return f"INV-{g.int(2019, 2027)}-{g.digits(4)}"


def claim_id(g: Gen) -> str:
    return f"EC-{g.digits(6)}"


def email(g: Gen) -> str:
    return f"{g.pick(NAMES)}@{g.pick(DOMAINS)}"


def date_en(g: Gen) -> str:
    return g.pick([g.date(2024, 2027), g.pick(["last week", "yesterday", "on Monday", "two weeks ago", "last month", "on the 3rd", "in October"])])


def date_zh(g: Gen) -> str:
    y, m, d = g.int(2024, 2027), g.int(1, 12), g.int(1, 28)
    return g.pick([f"{y}年{m}月{d}日", f"{m}月{d}号", g.date(2024, 2027), "上周", "昨天", "上个月", "前天", "周一"])


def fill(g: Gen, template: str) -> str:
    return template.format(
        order=order_id(g), inv=invoice_no(g), claim=claim_id(g), email=email(g), service=g.pick(SERVICES), svc_zh=g.pick(SERVICES_ZH),
        date=date_en(g), date_zh=date_zh(g), n=g.int(2, 30), code=g.pick([500, 502, 503, 504]),
    )


EN_PREFIX = ["", "", "", "Hi, ", "Hello, ", "Hi team, ", "Dear support, ", "Good morning, ", "Hey there, ", "URGENT: ", "Quick question: ", "Sorry to bother you, "]
EN_SUFFIX = ["", "", "", " Thanks!", " Thank you.", " Please help.", " Thanks in advance.", " This is urgent.", " Regards, Sam", " Cheers", " ASAP please"]
ZH_PREFIX = ["", "", "", "你好，", "您好，", "客服你好，", "在吗？", "麻烦问一下，", "急！", "请问，", "打扰一下，"]
ZH_SUFFIX = ["", "", "", "谢谢！", "谢谢", "麻烦尽快处理", "急用，谢谢", "辛苦了", "在线等", "麻烦了"]

CORE = {
    "order_status": {
        "en": [
            "where is my order {order}?", "what's the status of order {order}", "has my order {order} shipped yet?", "can you track order {order} for me",
            "my order {order} hasn't arrived", "when will {order} be delivered?", "order {order} still not delivered after {n} days", "tracking for {order} hasn't updated since {date}",
            "I placed order {order} {date} and it's still processing", "is {order} on its way?", "any update on the shipment of {order}?", "delivery status of my order please",
            "where is my package", "my parcel is late, order {order}", "I haven't received my order yet", "estimated delivery date for {order}?", "order {order} shows shipped but no tracking number",
            "the courier lost my package {order}?", "when does order {order} ship", "can you check why {order} is delayed", "what carrier is delivering {order}",
        ],
        "zh": [
            "我的订单{order}到哪了", "订单{order}发货了吗", "帮我查一下订单{order}的物流", "订单{order}什么时候能到", "我的快递到哪里了", "{order}怎么还没发货",
            "订单{order}物流一直没更新", "{date_zh}下的单到现在还没收到", "请问订单{order}的配送进度", "订单号{order}，麻烦查下物流状态", "我的包裹什么时候送到",
            "订单{order}显示已发货但查不到物流", "催一下订单{order}的发货", "订单{order}已经{n}天了还没到", "我买的东西到哪儿了", "查询订单状态{order}",
            "订单{order}是哪个快递发的", "订单{order}预计几号送达", "物流信息显示异常，订单{order}",
        ],
    },
    "refund_request": {
        "en": [
            "I want a refund for order {order}", "please refund my order {order}", "how do I get my money back for {order}", "I was charged twice, please refund the duplicate charge",
            "requesting a refund for {order}, the item arrived damaged", "refund please, wrong item received in {order}", "can I return {order} for a full refund?", "I cancelled {order}, where is my refund?",
            "my refund for {order} hasn't arrived yet", "the product is defective, I want a refund", "please process a refund to my credit card", "I'd like to return this and get my money back",
            "issue a refund for the overcharge on {order}", "refund the shipping fee for {order} please", "I returned the item {date}, when will I be refunded?", "I need a refund, the order never arrived",
            "start a return and refund for {order}", "you billed me for something I didn't order, refund it",
        ],
        "zh": [
            "我要退款，订单{order}", "申请退款{order}", "订单{order}怎么退款", "收到的商品坏了，要求退款", "重复扣款了，请退还", "退货退款，订单号{order}",
            "订单{order}取消了，钱什么时候退", "退款还没到账，订单{order}", "商品有质量问题，申请退款", "麻烦给我退款", "我不想要了，申请退款{order}", "多扣了运费，请退回",
            "订单{order}申请仅退款", "{date_zh}退的货，退款怎么还没到", "发错货了，我要退钱", "怎么申请退款", "订单{order}全额退款",
        ],
    },
    "invoice_copy": {
        "en": [
            "please send me a copy of invoice {inv}", "can I get a copy of my invoice for order {order}?", "resend invoice {inv} to {email}", "I need an invoice for {order}",
            "where can I download invoice {inv}?", "please email the invoice to {email}", "I lost invoice {inv}, can you send it again", "need a VAT invoice for my purchase",
            "could you reissue invoice {inv} with our company name", "send me the PDF of invoice {inv}", "I need a receipt for order {order} for my expense report", "copy of last month's invoice please",
            "invoice {inv} never arrived in my inbox", "please provide the billing statement for {date}", "duplicate invoice needed for {inv}", "can you forward the invoice for {order} to {email}",
        ],
        "zh": [
            "请给我发票副本{inv}", "麻烦开一下发票，订单{order}", "发票{inv}重新发送到{email}", "我需要订单{order}的发票", "怎么下载电子发票", "发票丢了，能补开一份吗",
            "请把发票发到我的邮箱{email}", "需要增值税专用发票", "发票{inv}抬头错了，请重开", "请提供{date_zh}的发票", "申请开具发票{order}", "电子发票{inv}发一下PDF",
            "发票{inv}一直没收到", "请补寄一份纸质发票", "我要发票用于报销，订单{order}", "发票副本麻烦发我一下",
        ],
    },
    "account_access": {
        "en": [
            "I can't log in to my account", "can't log in", "reset my password please", "I forgot my password", "my account is locked", "I'm not receiving the 2FA code",
            "password reset email never arrives at {email}", "login keeps failing with invalid credentials", "how do I unlock my account?", "I lost access to my authenticator app",
            "my account was suspended, how do I regain access", "I can't sign in with {email}", "the login page says my password is wrong", "help me recover my account",
            "I need to change the email address on my account", "the verification code doesn't work", "my username is not recognized when I log in", "someone changed my password, I can't get in",
        ],
        "zh": [
            "登录不了", "我登录不上账号", "密码重置", "忘记密码怎么办", "账号被锁定了", "收不到验证码", "重置密码的邮件没收到{email}", "账号被冻结，无法登录",
            "提示密码错误，但我确定是对的", "怎么找回账号", "二次验证收不到短信", "账号被盗了", "换手机了，登录不了", "怎么修改登录密码", "账户登录异常",
            "用{email}登录一直失败", "登录提示账号不存在", "帮我解锁账号",
        ],
    },
    "outage_report": {
        "en": [
            "is the API down?", "the {service} service is returning {code}", "{service} is down", "getting {code} errors from {service} since {date}", "is there an outage?",
            "{service} API has been failing for the last {n} minutes", "all requests to {service} time out", "your {service} endpoint is throwing {code} errors", "service {service} returning {code}",
            "is {service} down for everyone?", "the whole platform seems to be down", "{service} is extremely slow, looks like an incident", "we see a spike of {code}s on {service}",
            "is there a status page? {service} is not responding", "{service} outage affecting all our customers", "your servers are down", "{service} broken in production since this morning",
        ],
        "zh": [
            "{svc_zh}服务挂了吗", "接口一直返回{code}", "{svc_zh}接口报错{code}", "系统是不是宕机了", "服务不可用", "{service}服务返回{code}", "{svc_zh}功能全部超时",
            "平台是不是出故障了", "{svc_zh}服务从{date_zh}开始一直报错", "所有请求都失败了，是不是服务器出问题了", "{svc_zh}接口响应特别慢", "网站打不开了",
            "{service}服务大面积故障", "{svc_zh}系统异常，所有用户受影响", "API全部调不通", "{svc_zh}一直报{code}错误",
        ],
    },
    "expense_claim_status": {
        "en": [
            "what's the status of my expense claim {claim}?", "has my expense claim {claim} been approved?", "when will I be reimbursed for {claim}", "status of expense claim {claim}",
            "my reimbursement {claim} is still pending", "expense report {claim} was submitted {date}, any update?", "why was my expense claim {claim} rejected", "where is my travel reimbursement",
            "has finance paid out {claim}", "expense claim {claim} stuck in approval", "check my reimbursement status please", "I haven't received payment for expense claim {claim}",
            "who needs to approve {claim}?", "when do expense claims get reimbursed", "my expense claim for the trip {date} is not paid yet",
        ],
        "zh": [
            "我的报销单{claim}审批到哪了", "报销进度查询{claim}", "{claim}报销什么时候到账", "差旅报销审批状态", "报销单{claim}被驳回了，为什么", "报销{claim}一直待审批",
            "查一下我的报销进度", "{date_zh}提交的报销还没到账", "报销款什么时候发", "报销单{claim}卡在哪个环节了", "出差费用报销进度", "我的费用报销审批通过了吗{claim}",
            "报销单号{claim}，请问状态", "报销一直没打款", "报销流程走到哪一步了",
        ],
    },
}

# ------------------------------------------------------------------------------------ unknown
CITIES = ["Paris", "Tokyo", "London", "New York", "Berlin", "Sydney", "Shanghai", "Toronto", "Rome", "Madrid"]
CITIES_ZH = ["上海", "北京", "广州", "深圳", "成都", "杭州", "西安", "南京"]
TOPICS = ["cats", "dogs", "computers", "coffee", "mondays", "pirates", "math", "chickens", "penguins", "doctors"]
CODE_TASKS = ["sort a list", "read a CSV file", "parse JSON", "write a unit test", "connect to a database", "center a div", "merge two dictionaries", "make an HTTP request", "handle exceptions",
              "create a REST API", "generate invoice PDFs", "model an orders table", "write a regex for order numbers", "paginate query results", "hash a password"]
PROG_LANGS = ["Python", "JavaScript", "Java", "Go", "Rust", "C++", "TypeScript", "SQL", "Ruby", "Kotlin"]
TRIVIA = ["What is the tallest mountain in the world?", "Who painted the Mona Lisa?", "How far is the moon?", "What year did World War II end?", "How many planets are in the solar system?",
          "What's the population of Canada?", "Who wrote Hamlet?", "What is the speed of light?", "Which ocean is the largest?", "What is the square root of 144?",
          "What does DNA stand for?", "When was the Eiffel Tower built?", "What is the boiling point of water in Fahrenheit?"]
UNK_EN = [
    "what's the weather like in {city} {when}?", "will it rain in {city} {when}", "tell me a joke about {topic}", "tell me something funny", "how do I {task} in {lang}?",
    "write a {lang} function to {task}", "{trivia}", "recommend a movie for tonight", "what should I cook for dinner?", "how long should I boil an egg?", "what's a good name for a {topic} blog",
    "who is going to win the world cup", "write a poem about {topic}", "translate 'thank you' to {language}", "what time is it in {city}", "give me a fun fact about {topic}",
    "how do I improve my sleep", "any tips for learning {language}?", "how many calories in a banana", "explain quantum computing simply", "plan a 3-day trip to {city}",
    "best laptop for programming?", "what's {a} plus {b}", "is {lang} better than {lang2}?", "my {lang} code throws a null pointer exception, why?", "how to {task} using {lang}",
    "hello", "hi", "thanks", "good night", "ok", "test", "lol", "who are you?", "what can you do?",
]
UNK_ZH = [
    "{city_zh}明天天气怎么样", "今天会下雨吗", "讲个笑话", "给我讲个关于{topic_zh}的笑话", "用{lang}怎么{task_zh}", "{lang}如何{task_zh}", "推荐一部好看的电影", "晚饭吃什么好",
    "红烧肉怎么做", "帮我写一首诗", "地球到月亮有多远", "世界上最高的山是哪座", "周末去哪里玩比较好", "怎么提高睡眠质量", "学英语有什么好方法", "你是谁", "你好", "谢谢",
    "{a}加{b}等于多少", "帮我翻译一下这句话", "推荐几本书", "怎么减肥比较快", "{city_zh}有什么好吃的", "明天是星期几", "帮我规划一下{city_zh}三日游", "解释一下什么是区块链",
]
TOPICS_ZH = ["猫", "程序员", "老师", "熊猫", "医生", "数学"]
CODE_TASKS_ZH = ["排序一个数组", "读取文件", "解析JSON", "连接数据库", "写单元测试", "发送HTTP请求", "实现单例模式", "处理异常", "生成PDF发票", "设计订单表"]
LANGUAGES = ["Spanish", "French", "German", "Japanese", "Korean", "Italian", "Portuguese"]
GIBBERISH = ["qwertyuiop", "zzzz", "????", "...", "asdf asdf", "12345", "xyz", "aaaaaaa", "!!!", "??", "hmm", "jjjj kkkk"]


def unknown_text(g: Gen) -> str:
    k = g.r.random()
    if k < 0.42:
        t = g.pick(UNK_EN)
        lang, lang2 = g.r.sample(PROG_LANGS, 2)
        s = t.format(city=g.pick(CITIES), when=g.pick(["tomorrow", "this weekend", "today", "next week"]), topic=g.pick(TOPICS), task=g.pick(CODE_TASKS), lang=lang, lang2=lang2,
                     trivia=g.pick(TRIVIA), language=g.pick(LANGUAGES), a=g.int(2, 999), b=g.int(2, 999))
        return g.case(s) if g.chance(0.3) else s
    if k < 0.75:
        t = g.pick(UNK_ZH)
        return t.format(city_zh=g.pick(CITIES_ZH), topic_zh=g.pick(TOPICS_ZH), lang=g.pick(PROG_LANGS), task_zh=g.pick(CODE_TASKS_ZH), a=g.int(2, 999), b=g.int(2, 999))
    if k < 0.88:
        return g.pick(OTHER_LANG)
    if k < 0.95:
        return random_prose(g)
    return g.pick(GIBBERISH)


def make_template(intent: str):
    def t(g: Gen) -> str:
        if g.chance(0.5):
            core = fill(g, g.pick(CORE[intent]["en"]))
            core = g.case(core) if g.chance(0.3) else core
            return (g.pick(EN_PREFIX) + core + g.pick(EN_SUFFIX)).strip()
        core = fill(g, g.pick(CORE[intent]["zh"]))
        suffix = g.pick(ZH_SUFFIX)
        if suffix and core[-1] not in "？?！!。，,":
            suffix = g.pick(["，", "。", "！", " "]) + suffix
        return (g.pick(ZH_PREFIX) + core + suffix).strip()

    t.__name__ = f"tpl_{intent}"
    return t


TEMPLATES = {intent: [make_template(intent)] for intent in CORE}
TEMPLATES["unknown"] = [unknown_text]


def generate(seed: int = DEFAULT_SEED, per_label: int = PER_LABEL) -> list[Example]:
    """The training examples, in a deterministic order."""
    return generate_examples(TEMPLATES, LABELS, seed, per_label)


if __name__ == "__main__":
    generator_main(__doc__, DEFAULT_SEED, generate, Path(__file__).with_name("train.jsonl"))
