"""Training data for the ticket intent router, generated from templates with a seeded RNG.

    python3 models/intent-router/generate.py [--seed 20261130] [--out models/intent-router/train.jsonl]

Tickets are composed, not listed: a core ask (English, Chinese or mixed) is wrapped in one of several
writers' styles — terse, plain, formal, angry, with typos, a long e-mail with greeting, context,
signature, disclaimer and a quoted earlier thread — and may carry a negated mention of another intent
("not asking for a refund, just ...") or a second, minor ask after the primary one ("also ...": the
label is the primary). Ids come in many shapes (O-…, PO-2024-00017-B, SO#88123, 4500012345, bare
claim and user numbers) and are masked by the featurizer anyway: the intent must come from the words.

`unknown` is the largest class: other industries' tickets (travel, telecom, banking, healthcare,
utilities, education, real estate), internal IT questions, HR and office chatter, sales pitches and
spam, feedback and feature requests, coding and trivia questions, chit-chat, other languages, gibberish.

The held-out evaluation set (eval.jsonl) is hand-written separately and never read here.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import multilingual as ML  # noqa: E402
import robust as R  # noqa: E402
from common import OTHER_LANG, Example, Gen, generate_examples, generator_main, random_prose  # noqa: E402

LABELS = ["order_status", "refund_request", "invoice_copy", "account_access", "outage_report", "expense_claim_status", "unknown"]
PER_LABEL = 3600  # issue 43: ja/es/de and the injection/noise/mixed kinds came on top of en/zh
UNKNOWN_SHARE = 2.5  # unknown gets this many times PER_LABEL examples
DEFAULT_SEED = 20261130

FIRST = ["Anna", "Ben", "Carlos", "Dana", "Elif", "Femi", "Grace", "Hiro", "Ines", "Jamal", "Katrin", "Li Wei", "Maria", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Sven", "Tomás", "Wang Fang", "Zhang Min"]
LAST = ["Smith", "Müller", "Garcia", "Chen", "Okafor", "Rossi", "Nakamura", "Kowalski", "Dubois", "Patel", "Johansson", "Silva", "Novak", "Li", "Wang"]
COMPANIES = ["Acme GmbH", "Northwind Traders", "Globex Ltd.", "Contoso", "Initech", "Blue Harbor Logistics", "上海星辰贸易有限公司", "Fabrikam Inc.", "Helios Foods", "Kite & Co"]
TITLES = ["Procurement Manager", "Office Manager", "Head of Finance", "IT Administrator", "Operations Lead", "Accounts Payable", "CTO", "Purchasing", "采购部", "财务部"]
DOMAINS = ["example.com", "acme.io", "corp.cn", "mail.example.org", "northwind.example", "qq.com", "163.com", "gmail.com", "outlook.com", "globex.co.uk"]
SERVICES = ["payments", "checkout", "search", "login", "API", "webhooks", "dashboard", "reporting", "notifications", "mobile app", "SSO", "file upload", "export", "sync"]
SERVICES_ZH = ["支付", "结账", "搜索", "登录", "接口", "回调", "后台", "报表", "消息推送", "App", "下单", "文件上传", "导出"]
PRODUCTS = ["standing desk", "blender", "office chairs", "laptop stand", "printer toner", "running shoes", "headphones", "coffee machine", "monitor", "phone case", "winter jacket", "server rack", "10 boxes of paper", "spare parts"]
PRODUCTS_ZH = ["办公椅", "打印机", "耳机", "咖啡机", "显示器", "手机壳", "羽绒服", "零件", "键盘", "台灯"]
WHEN = ["yesterday", "last week", "on Monday", "two weeks ago", "last month", "on the 3rd", "10 days ago", "this morning", "in October", "before Christmas", "on 2026-11-02", "on 03/11"]
WHEN_ZH = ["昨天", "上周", "上个月", "前天", "周一", "十天前", "11月3日", "双十一", "月初", "2026年11月2日"]


# ------------------------------------------------------------------------------------- ids
def order_ref(g: Gen) -> str:
    y = g.int(2021, 2027)
    return g.pick([
        f"O-{g.digits(8)}", f"PO-{y}-{g.digits(5)}" + g.pick(["", "-B", "-A", "-01", "/2"]), f"PO{g.digits(g.int(6, 10))}", f"SO#{g.digits(5)}", f"SO-{g.digits(6)}",
        f"45{g.digits(8)}", g.digits(g.int(6, 12)), f"#{g.digits(g.int(5, 9))}", f"ORD-{g.digits(6)}", f"{g.digits(3)}-{g.digits(7)}-{g.digits(7)}", f"WX{y}{g.digits(9)}",
        f"A{g.digits(2)}{g.alnum(4, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}{g.digits(3)}", f"ORDER-{y}-{g.digits(4)}", f"{g.alnum(2, 'ABCDEFGHJKLMNPRSTUVWXYZ')}{g.digits(7)}",
    ])


def invoice_ref(g: Gen) -> str:
    y = g.int(2021, 2027)
    return g.pick([f"INV-{y}-{g.digits(4)}", f"INV{g.digits(6)}", f"{y}/INV/{g.digits(5)}", f"FA-{y}-{g.digits(4)}", f"F{y}-{g.digits(5)}", f"#INV-{g.digits(5)}", g.digits(g.int(8, 10)), f"RE-{g.digits(4)}-{y}", f"BILL-{g.digits(6)}", f"NO.{g.digits(8)}"])


def claim_ref(g: Gen) -> str:
    y = g.int(2021, 2027)
    return g.pick([f"EC-{g.digits(6)}", g.digits(6), g.digits(g.int(5, 8)), f"EXP-{y}-{g.digits(4)}", f"ER{g.digits(6)}", f"TE-{y}-{g.digits(3)}", f"BX{y}{g.digits(7)}", f"#{g.digits(6)}", f"CLM{g.digits(7)}"])


def user_ref(g: Gen) -> str:
    return g.pick([g.digits(g.int(5, 9)), f"U-{g.digits(6)}", f"M-{g.digits(5)}", f"{g.pick(['jsmith', 'anna.k', 'ops_admin', 'li.wei', 'pedro88', 'kmueller'])}", f"C-{g.digits(6)}", f"UID{g.digits(7)}"])


def email(g: Gen) -> str:
    return f"{g.pick(['alice', 'bob', 'chen.wei', 'm.garcia', 'ops', 'finance', 'li.lei', 'j.smith', 'accounting', 'tom', 'ap', 'purchasing'])}@{g.pick(DOMAINS)}"


def amount(g: Gen) -> str:
    v = g.int(5, 4000)
    return g.pick([f"${v}.{g.digits(2)}", f"€{v}", f"{v} EUR", f"¥{v}", f"{v}元", f"USD {v}", f"£{v}.{g.digits(2)}"])


ORDER_N = ["order", "order", "order", "purchase", "purchase order", "PO", "sales order", "shipment", "package", "parcel", "delivery", "consignment"]
ORDER_NO = ["order {id}", "order #{id}", "order no. {id}", "order number {id}", "PO {id}", "PO# {id}", "purchase order {id}", "our PO {id}", "ref {id}", "{id}", "reference {id}", "SO {id}", "tracking {id}"]


def fill(g: Gen, t: str) -> str:
    return t.format(
        order=g.pick(ORDER_NO).format(id=order_ref(g)), oid=order_ref(g), obj=g.pick(ORDER_N), product=g.pick(PRODUCTS), product_zh=g.pick(PRODUCTS_ZH),
        inv=invoice_ref(g), claim=claim_ref(g), user=user_ref(g), email=email(g), amount=amount(g), when=g.pick(WHEN), when_zh=g.pick(WHEN_ZH),
        service=g.pick(SERVICES), svc_zh=g.pick(SERVICES_ZH), code=g.pick([500, 502, 503, 504, 500, "5xx"]), n=g.int(2, 30),
    )


# ------------------------------------------------------------------------------------ intents
# Each intent: asks (the request itself) and context (background a writer adds), English and Chinese.
INTENT = {
    "order_status": {
        "ask": [
            "where is my {order}?", "what's the status of {order}", "has {order} shipped yet?", "can you track {order} for me", "{order} hasn't arrived", "when will {order} be delivered?",
            "{order} still not delivered after {n} days", "tracking for {order} hasn't updated since {when}", "is {order} on its way?", "any update on the shipment of {order}?",
            "where is my {obj}", "my {obj} is late", "I haven't received my {product} yet", "estimated delivery date for {order}?", "{order} shows shipped but there is no tracking number",
            "could you give me an ETA for {order}", "please confirm the dispatch date of {order}", "kindly advise the delivery status of {order}", "we are still waiting for the goods on {order}",
            "the courier says delivered but nothing arrived, {order}", "which carrier has {order}", "is {order} stuck in customs?", "what happened to my {product}", "when does {order} ship",
            "status update on {order} please", "need the tracking link for {order}", "our {product} were supposed to arrive {when}, where are they", "is {order} still in the warehouse",
            "please expedite {order}, it is overdue", "the delivery window for {order} passed", "can you check why {order} is delayed", "has the {product} left your warehouse",
            "order status?", "where's my stuff", "tracking number please", "still waiting on my delivery", "no sign of my {obj}",
            
            "the parcel was returned to sender, what now with {order}", "delivery attempt failed for {order}, when will you try again", "has the freight for {order} been booked",
            "can you confirm {order} will arrive before {when}", "what's the hold-up with {order}", "I need a proof of delivery for {order}", "the goods for {order} are not here yet",
        ],
        "context": [
            "I ordered a {product} {when}.", "The tracking page still says label created.", "We paid by bank transfer {when}.", "Our production line depends on this delivery.",
            "The website said 3-5 business days.", "It was a gift for my mother.", "I already checked with my neighbours.", "Your chat bot could not help.",
        ],
        "ask_zh": [
            "我的订单{oid}到哪了", "订单{oid}发货了吗", "帮我查一下{oid}的物流", "订单{oid}什么时候能到", "我的快递到哪里了", "{oid}怎么还没发货", "订单{oid}物流一直没更新", "{when_zh}下的单到现在还没收到",
            "请问订单{oid}的配送进度", "单号{oid}，麻烦查下物流", "我的包裹什么时候送到", "订单{oid}显示已发货但查不到物流", "催一下{oid}的发货", "订单{oid}已经{n}天了还没到", "我买的{product_zh}到哪儿了",
            "采购单{oid}的货什么时候到", "物流信息显示异常，订单{oid}", "快递显示签收了但我没收到，单号{oid}", "请告知{oid}的预计到货时间", "订单状态查询", "货还没到", "什么时候发货啊", "我的订单怎么一直在处理中", "快递是不是丢了，{oid}", "帮我催一下快递", "物流停在中转站好几天了", "能查一下{oid}是哪家物流吗", "显示派送失败，什么时候再送",
        ],
        "context_zh": ["{when_zh}下的单。", "付款已经{n}天了。", "急着用。", "物流页面一直没有变化。", "客服电话打不通。"],
    },
    "refund_request": {
        "ask": [
            "I want a refund for {order}", "please refund {order}", "how do I get my money back for {order}", "I was charged twice, please refund the duplicate charge", "the {product} arrived damaged, I want a refund",
            "refund please, wrong item received in {order}", "can I return {order} for a full refund?", "I cancelled {order}, where is my refund?", "my refund for {order} hasn't arrived yet",
            "the {product} is defective, I want my money back", "please process a refund to my credit card", "I'd like to return this and get my money back", "issue a refund for the overcharge of {amount}",
            "refund the shipping fee for {order} please", "I returned the {product} {when}, when will I be refunded?", "I need a refund, {order} never arrived", "start a return and refund for {order}",
            "you billed me {amount} for something I didn't order, refund it", "please reverse the charge of {amount}", "we request a credit note and refund for {order}", "kindly reimburse the {amount} we overpaid on {order}",
            "cancel {order} and refund the payment", "money back please", "I want my {amount} back", "the refund you promised never showed up on my statement", "we were double charged on {order}, please credit us",
            "partial refund for the missing items in {order}", "I disputed the charge with my bank, please refund instead", "how long does a refund take? I returned {order} {when}", "refund status for {order}?",
            "please credit my card for the returned {product}", 
            "send the money back for {order}", "I paid twice, give me one payment back", "I expect my money to be returned for {order}", "compensate me for the damaged {product}",
            "I want to return {order} and get the payment reversed", "cancel and reimburse {order}",
            "you took {amount} after I cancelled, I want it back", "put the money back on my card for {order}", "we sent the goods back and have not been credited yet",
            "return the amount to my Mastercard please", "the charge for {order} should never have happened, pay it back", "still waiting to be credited for the returned {product}",
        ],
        "context": [
            "The box was crushed when it arrived.", "I have photos of the damage.", "The size was wrong.", "I no longer need it.", "It stopped working after two days.",
            "My bank statement shows two charges of {amount}.", "I sent it back with the prepaid label.", "The item is unopened.",
        ],
        "ask_zh": [
            "我要退款，订单{oid}", "申请退款{oid}", "订单{oid}怎么退款", "收到的{product_zh}坏了，要求退款", "重复扣款了，请退还", "退货退款，单号{oid}", "订单{oid}取消了，钱什么时候退",
            "退款还没到账，订单{oid}", "商品有质量问题，申请退款", "麻烦给我退款", "我不想要了，申请退款", "多扣了运费，请退回", "订单{oid}申请仅退款", "{when_zh}退的货，退款怎么还没到",
            "发错货了，我要退钱", "怎么申请退款", "订单{oid}全额退款", "多收了{amount}，请退回", "退款进度怎么样了", "东西没收到，把钱退给我", "钱请原路退回", "多扣的钱什么时候还给我", "我要求赔偿并退款", "把货款退给我们", "预付款请退回",
        ],
        "context_zh": ["包装破损严重。", "有照片为证。", "尺码不对。", "用了两天就坏了。", "已经寄回去了。"],
    },
    "invoice_copy": {
        "ask": [
            "please send me a copy of invoice {inv}", "can I get a copy of the invoice for {order}?", "resend invoice {inv} to {email}", "I need an invoice for {order}", "where can I download invoice {inv}?",
            "please email the invoice to {email}", "I lost invoice {inv}, can you send it again", "need a VAT invoice for my purchase", "could you reissue invoice {inv} with our company name",
            "send me the PDF of invoice {inv}", "I need a receipt for {order} for my expense report", "copy of last month's invoice please", "invoice {inv} never arrived in my inbox",
            "please provide the billing statement for {when}", "duplicate invoice needed for {inv}", "can you forward the invoice for {order} to {email}", "our auditors need copies of invoices {inv} and {inv}",
            "please correct the billing address on invoice {inv} and resend", "the invoice attachment was blank, please resend", "we need a tax invoice (fapiao) for {order}", "kindly provide an itemised receipt for {amount}",
            "could you send the invoices for Q3 again", "I need a proforma invoice for {order}", "missing invoice for {order}", "invoice copy please", "where do I find my invoices in the portal",
            "please issue the invoice in EUR instead and send it to {email}",
            
            
            "we never got an invoice for {order}",
        ],
        "context": ["Our accounting department needs it for the month-end close.", "The original went to a former colleague.", "Our VAT number is missing on it.", "It is for our tax return.", "The auditors are here this week."],
        "ask_zh": [
            "请给我发票副本{inv}", "麻烦开一下发票，订单{oid}", "发票{inv}重新发送到{email}", "我需要订单{oid}的发票", "怎么下载电子发票", "发票丢了，能补开一份吗", "请把发票发到我的邮箱{email}",
            "需要增值税专用发票", "发票{inv}抬头错了，请重开", "请提供{when_zh}的发票", "申请开具发票{oid}", "电子发票{inv}发一下PDF", "发票{inv}一直没收到", "请补寄一份纸质发票", "我要发票用于报销，订单{oid}",
            "发票副本麻烦发我一下", "开票信息有误，请重新开票", "收据能再发一份吗", "发票抬头改一下重新发", "请开具{oid}的电子发票", "财务要发票对账，请补发",
        ],
        "context_zh": ["财务月底要对账。", "公司报销需要。", "之前的邮件找不到了。", "税号写错了。"],
    },
    "account_access": {
        "ask": [
            "I can't log in to my account", "can't log in", "reset my password please", "I forgot my password", "my account is locked", "I'm not receiving the 2FA code", "the password reset email never arrives at {email}",
            "login keeps failing with invalid credentials", "how do I unlock my account?", "I lost access to my authenticator app", "my account was suspended, how do I regain access", "I can't sign in with {email}",
            "the login page says my password is wrong", "help me recover my account, user {user}", "I need to change the e-mail address on my account", "the verification code doesn't work", "my username {user} is not recognized",
            "someone changed my password and I can't get in", "locked out after too many attempts, user id {user}", "SSO login loops back to the sign-in page", "the magic link expired before I could use it",
            "please re-enable the account of our user {user}", "new phone, lost my MFA, can't get into the portal", "account {user} is deactivated, please restore access", "I never got the activation e-mail",
            "sign-in says account does not exist but I have orders", "password reset link says invalid token", "cannot access my dashboard since {when}", "pls unlock user {user}", "login not working",
        ],
        "context": ["I changed phones last week.", "I tried three browsers.", "Our admin left the company.", "I have cleared my cookies.", "The code never arrives by SMS."],
        "ask_zh": [
            "登录不了", "我登录不上账号", "密码重置", "忘记密码怎么办", "账号被锁定了", "收不到验证码", "重置密码的邮件没收到{email}", "账号被冻结，无法登录", "提示密码错误，但我确定是对的", "怎么找回账号",
            "二次验证收不到短信", "账号被盗了", "换手机了，登录不了", "怎么修改登录密码", "账户登录异常", "用{email}登录一直失败", "登录提示账号不存在", "帮我解锁账号，用户号{user}", "用户{user}无法登录",
        ],
        "context_zh": ["换了新手机。", "试了好几次了。", "短信一直收不到。", "管理员离职了。"],
    },
    "outage_report": {
        "ask": [
            "is the API down?", "the {service} service is returning {code}", "{service} is down", "getting {code} errors from {service} since {when}", "is there an outage?", "{service} has been failing for the last {n} minutes",
            "all requests to {service} time out", "your {service} endpoint is throwing {code} errors", "is {service} down for everyone?", "the whole platform seems to be down", "{service} is extremely slow, looks like an incident",
            "we see a spike of {code}s on {service}", "is there a status page? {service} is not responding", "{service} outage affecting all our customers", "your servers are down", "{service} broken in production since this morning",
            "webhooks stopped arriving {n} minutes ago", "the dashboard won't load for anyone in our team", "error rate on {service} went to 100%", "our integration gets connection refused from your {service}",
            "production incident: {service} unavailable", "degraded performance on {service}, p99 latency over 10s", "site is down!!", "nothing works since your deploy", "cannot reach your API from any region",
            
            "callbacks stopped firing", 
            
        ],
        "context": ["Our monitoring paged us at 3am.", "Nothing changed on our side.", "Your status page still shows green.", "This affects all our stores.", "We tested from two networks."],
        "ask_zh": [
            "{svc_zh}服务挂了吗", "接口一直返回{code}", "{svc_zh}接口报错{code}", "系统是不是宕机了", "服务不可用", "{service}服务返回{code}", "{svc_zh}功能全部超时", "平台是不是出故障了", "{svc_zh}服务从{when_zh}开始一直报错",
            "所有请求都失败了，是不是服务器出问题了", "{svc_zh}接口响应特别慢", "网站打不开了", "{svc_zh}大面积故障", "API全部调不通", "{svc_zh}一直报{code}错误", "你们服务器崩了吗", "{svc_zh}页面白屏了", "所有用户都打不开{svc_zh}", "接口全部超时，是不是出事故了",
        ],
        "context_zh": ["监控一直在报警。", "我们这边没有改动。", "所有门店都受影响。", "状态页还是正常的。"],
    },
    "expense_claim_status": {
        "ask": [
            "what's the status of my expense claim {claim}?", "has my expense claim {claim} been approved?", "when will I be reimbursed for {claim}", "status of expense claim {claim}", "my reimbursement {claim} is still pending",
            "expense report {claim} was submitted {when}, any update?", "why was my expense claim {claim} rejected", "where is my travel reimbursement", "has finance paid out claim {claim}", "claim {claim} stuck in approval",
            "check my reimbursement status please", "I haven't been paid for expense claim {claim}", "who needs to approve claim {claim}?", "when do expense claims get reimbursed", "my expenses for the trip {when} are not paid yet",
            "mileage claim {claim} still shows submitted", "per diem for the conference hasn't come through", "is claim number {claim} with my manager or with finance?", "reimbursement of {amount} for the client dinner, status?",
            "my T&E report has been pending for {n} days", "did accounts payable process my expense claim", "claim {claim}: approved but no payment yet", "when will the {amount} I spent on hotels be paid back to me",
            
            "reimbursement request {claim} status please", "the company still owes me {amount} for travel",
        ],
        "context": ["I attached all receipts.", "My manager approved it {when}.", "It was for the Berlin trip.", "The amount is {amount}.", "I paid with my private card."],
        "ask_zh": [
            "我的报销单{claim}审批到哪了", "报销进度查询{claim}", "{claim}报销什么时候到账", "差旅报销审批状态", "报销单{claim}被驳回了，为什么", "报销{claim}一直待审批", "查一下我的报销进度", "{when_zh}提交的报销还没到账",
            "报销款什么时候发", "报销单{claim}卡在哪个环节了", "出差费用报销进度", "我的费用报销审批通过了吗", "报销单号{claim}，请问状态", "报销一直没打款", "报销流程走到哪一步了",
        ],
        "context_zh": ["发票都已经上传了。", "领导已经批了。", "是上个月出差的费用。", "金额{amount}。"],
    },
}

# Mixed Chinese/English asks (code-switching as written in chats).
MIXED = {
    "order_status": ["我的order {oid}还没到", "请问order status怎么样了", "package一直没delivery", "tracking number能发我一下吗", "我的快递到哪了? order {oid}", "PO {oid}什么时候ship"],
    "refund_request": ["请问refund什么时候到账", "我要refund，order {oid}", "帮我refund一下，东西坏了", "refund还没收到", "charge了两次，请refund"],
    "invoice_copy": ["invoice麻烦resend一下", "能发一份invoice copy吗", "需要invoice PDF，订单{oid}", "请把invoice发到{email}"],
    "account_access": ["login不了", "password忘了怎么reset", "account被lock了", "2FA code收不到", "登录一直提示invalid password"],
    "outage_report": ["API又挂了", "{service}一直报{code}", "server是不是down了", "系统outage了吗"],
    "expense_claim_status": ["我的expense claim {claim}到哪一步了", "reimbursement什么时候到账", "报销claim {claim}还是pending", "travel expense还没报销"],
}

# A negated mention of another intent ("not a refund, ..."): the label is the ask that follows.
NEG = {
    "order_status": ["I'm not asking for a refund,", "This isn't about an invoice,", "No need to cancel anything,", "我不是要退款，", "不用退货，"],
    "refund_request": ["I don't need tracking info,", "Not asking about delivery,", "This is not about the invoice,", "不用查物流了，", "不要换货，"],
    "invoice_copy": ["I don't want a refund,", "The order arrived fine,", "No problem with the delivery,", "不是要退款，", "货已经收到了，"],
    "account_access": ["This is not an outage,", "My order is fine,", "I don't need an invoice,", "不是系统故障，", "订单没问题，"],
    "outage_report": ["It's not my password,", "Not a login problem on our side,", "This is not a billing question,", "不是密码的问题，", "不是我们账号的问题，"],
    "expense_claim_status": ["This is not a customer refund,", "Not about an order,", "I'm not asking for an invoice,", "不是订单退款，", "不是要开发票，"],
}
# A minor second ask after the primary one: the label stays the primary.
SECOND = {
    "order_status": ["Also, where is my order?", "P.S. any tracking number?", "另外订单到哪了？"],
    "refund_request": ["Also, I may want a refund later.", "Btw the refund from last time is still missing.", "顺便问下退款的事。"],
    "invoice_copy": ["Also please send the invoice.", "P.S. we'll need an invoice for it.", "另外麻烦开个发票。"],
    "account_access": ["Btw I also can't log in sometimes.", "Also my password reset mail never came.", "顺便说一下我登录也有点问题。"],
    "outage_report": ["Btw your website was slow earlier.", "Also the API gave us a 500 once.", "另外网站刚才也有点卡。"],
    "expense_claim_status": ["Also my expense claim is still pending.", "Unrelated: any news on my reimbursement?", "另外我的报销还没到。"],
}

# ------------------------------------------------------------------------------------ styles
GREET = ["Hi,", "Hello,", "Hi team,", "Dear support,", "Good morning,", "Hey there,", "Dear Sir or Madam,", "To whom it may concern,", "Hello {first},", "Hi support team,", "Morning all,"]
CLOSE = ["Thanks!", "Thank you.", "Please help.", "Thanks in advance.", "This is urgent.", "Cheers", "ASAP please", "Looking forward to your reply.", "Kind regards", "Best,", "Thx", ""]
ZH_GREET = ["你好，", "您好，", "客服你好，", "在吗？", "麻烦问一下，", "急！", "请问，", "打扰一下，", "尊敬的客服：", "Hi，"]
ZH_CLOSE = ["谢谢！", "谢谢", "麻烦尽快处理", "急用，谢谢", "辛苦了", "在线等", "麻烦了", "盼复。", ""]
ANGRY_EN = ["This is unacceptable!", "Absolutely ridiculous.", "Third time I'm writing!!!", "I am very disappointed.", "Fix this NOW.", "Worst service ever.", "I will escalate this to my lawyer.", "WTF?!"]
ANGRY_ZH = ["太离谱了！", "第三次问了！！！", "什么破服务", "再不处理我就投诉了", "气死我了", "能不能有点效率"]
DISCLAIMERS = [
    "This e-mail and any attachments are confidential and intended solely for the addressee.", "Please consider the environment before printing this e-mail.",
    "Sent from my iPhone", "Sent from Outlook for Android", "本邮件及其附件含有保密信息，仅限于发送给上面地址中列出的个人或群组。", "Von meinem iPad gesendet",
]
QUOTED = [
    "Thank you for contacting us. Your request has been received and a member of our team will get back to you within 2 business days.",
    "We're sorry for the inconvenience. Could you please provide more details?", "Your ticket has been created. Please do not reply above this line.",
    "Hi, following up on our call earlier today.", "感谢您的来信，我们会尽快处理。", "Please see the attached document.",
]


def typo(g: Gen, s: str) -> str:
    """Keyboard-style noise on some words: a dropped, doubled, swapped or replaced letter."""
    words = s.split(" ")
    for i, w in enumerate(words):
        if len(w) < 4 or not w.isascii() or not g.chance(0.25):
            continue
        j = g.int(1, len(w) - 2)
        k = g.r.random()
        if k < 0.3:
            w = w[:j] + w[j + 1 :]
        elif k < 0.5:
            w = w[:j] + w[j] + w[j:]
        elif k < 0.8:
            w = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        else:
            w = w[:j] + g.pick("qwertyuiopasdfghjklzxcvbnm") + w[j + 1 :]
        words[i] = w
    return " ".join(words)


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


# ------------------------------------------------------------------------------- compositional
# Asks assembled from parts (a lead-in, the thing, what is wrong or wanted), so that the model learns
# the vocabulary of each intent rather than whole sentences. Lists written for the generator, not
# taken from the held-out set.
COMP = {
    "order_status": {
        "lead": ["where is", "any news on", "can you locate", "what is going on with", "when can I expect", "could you check on", "I am still waiting for", "please look into", "update on", "status of", "any idea where", "need an ETA for", "can someone trace"],
        "thing": ["my order", "our order", "the order", "my package", "the parcel", "my shipment", "the delivery", "my purchase", "the goods", "the items I bought", "our consignment", "the box", "my online order", "the pallet", "the replacement unit", "our bulk order"],
        "state": ["it hasn't arrived", "it is late", "it seems delayed", "it never showed up", "tracking has not moved", "it still says processing", "it has not been dispatched", "it shows in transit for ages", "the courier lost it", "it is overdue", "nobody knows where it is", "the delivery date keeps slipping", "it went to the wrong depot"],
        "zh_thing": ["订单", "包裹", "快递", "货", "商品", "物流", "发货", "采购的货", "网购的东西"],
        "zh_state": ["还没到", "一直没发货", "物流不动了", "到哪了", "怎么还在路上", "迟迟没有送达", "显示运输中好久了", "一直在处理中", "什么时候能送到", "被快递弄丢了"],
    },
    "refund_request": {
        "lead": ["please refund", "I want a refund for", "give me my money back for", "reverse the charge for", "credit back", "I'd like to be refunded for", "return my payment for", "cancel and refund", "I demand a refund for", "can you pay back", "I need the money back for"],
        "thing": ["my order", "this purchase", "the damaged item", "the duplicate payment", "the overcharge", "the wrong size", "the faulty product", "the cancelled order", "the returned goods", "the shipping fee", "the unused subscription month", "the item that never came"],
        "state": ["I was charged twice", "it arrived broken", "I returned it already", "it was not as described", "you billed the wrong amount", "I cancelled within the window", "the refund still hasn't come through", "the money left my account twice", "it stopped working on day one"],
        "zh_thing": ["退款", "货款", "多扣的钱", "运费", "重复扣的款", "订单的钱", "退货的钱", "预付款"],
        "zh_state": ["请退给我", "什么时候退回", "还没到账", "申请原路退回", "要求全额退还", "麻烦尽快退", "退到我的卡上", "一直没退"],
    },
    "invoice_copy": {
        "lead": ["please send", "could you resend", "I need a copy of", "email me", "can I get", "please forward", "re-issue", "where can I download", "I can't find", "please provide", "we still need", "kindly share"],
        "thing": ["the invoice", "my invoice", "a copy of the invoice", "the receipt", "the bill", "a VAT invoice", "the tax invoice", "the billing statement", "the invoice PDF", "an itemised receipt", "the corrected invoice", "last month's invoices", "a duplicate invoice"],
        "state": ["for our accounts", "for the tax return", "for my expense report", "with our company name on it", "the original never arrived", "the attachment was empty", "the address on it is wrong", "our auditors ask for it", "for bookkeeping"],
        "zh_thing": ["发票", "电子发票", "增值税发票", "收据", "发票副本", "发票PDF", "账单", "专票"],
        "zh_state": ["请补发一份", "麻烦重新发一下", "没收到", "抬头开错了请重开", "丢了能再开吗", "发到我邮箱", "下载不了", "请尽快开具"],
    },
    "account_access": {
        "lead": ["I can't", "I am unable to", "we cannot", "still can't", "no way to", "it won't let me", "help me", "I keep failing to", "my colleague can't"],
        "thing": ["log in", "sign in", "get into my account", "access the portal", "reset my password", "receive the verification code", "pass two-factor authentication", "unlock my account", "recover my account", "use the login link", "open my profile"],
        "state": ["the password is rejected", "the account is locked", "the reset e-mail never comes", "the 2FA code is invalid", "it says the user does not exist", "the session expires immediately", "I lost my authenticator", "the account was disabled", "the captcha fails every time"],
        "zh_thing": ["登录", "账号", "密码", "验证码", "二次验证", "账户", "登陆"],
        "zh_state": ["进不去", "被锁了", "一直提示错误", "收不到", "重置不了", "失效了", "被冻结了", "找不回来"],
    },
    "outage_report": {
        "lead": ["is", "looks like", "we think", "it seems", "right now", "since this morning", "for the last hour", "urgent:", "heads up,"],
        "thing": ["the API", "your platform", "the service", "your servers", "the checkout", "payments", "the website", "the app", "the login service", "search", "the dashboard", "your endpoint", "the webhook delivery"],
        "state": ["is down", "is returning 5xx errors", "is not responding", "keeps timing out", "is unreachable", "has an outage", "throws 503 for everyone", "is broken in production", "is extremely slow for all users", "fails every request", "went offline", "is erroring across all regions"],
        "zh_thing": ["接口", "服务", "系统", "网站", "平台", "服务器", "支付", "App"],
        "zh_state": ["挂了", "宕机了", "一直报错", "访问不了", "全部超时", "返回503", "出故障了", "崩了", "响应特别慢"],
    },
    "expense_claim_status": {
        "lead": ["what is the status of", "has finance approved", "when will I be reimbursed for", "any update on", "who is holding up", "still waiting on", "is there news about", "please chase", "why was rejected:"],
        "thing": ["my expense claim", "my expense report", "my reimbursement", "the travel expenses", "my mileage claim", "the per diem", "my T&E report", "the conference costs I paid", "my hotel expenses", "the taxi receipts I submitted", "my out-of-pocket expenses"],
        "state": ["it has been pending for weeks", "my manager approved it", "it still shows submitted", "the money hasn't been paid out", "it was sent back without a reason", "it is stuck in approval", "payroll didn't include it", "finance has not processed it"],
        "zh_thing": ["报销", "报销单", "差旅费", "费用报销", "报销款", "出差报销", "垫付的费用"],
        "zh_state": ["审批到哪了", "什么时候到账", "一直待审批", "被驳回了", "还没打款", "卡在财务那", "进度如何", "领导批了吗"],
    },
}


def compose_en(g: Gen, intent: str) -> str:
    c = COMP[intent]
    lead, thing, state = g.pick(c["lead"]), g.pick(c["thing"]), g.pick(c["state"])
    ref = g.pick(["", "", f" {g.pick(ORDER_NO).format(id=order_ref(g))}" if intent in ("order_status", "refund_request") else "", f" ({g.pick([invoice_ref, claim_ref, user_ref])(g)})"])
    form = g.int(0, 4)
    if form == 0:
        return f"{lead} {thing}{ref}? {cap(state)}."
    if form == 1:
        return f"{cap(state)}, {lead} {thing}{ref}"
    if form == 2:
        return f"{thing}{ref}: {state}. {lead} it?"
    if form == 3:
        return f"{lead} {thing}{ref}"
    return f"{cap(thing)}{ref} - {state}"


def compose_zh(g: Gen, intent: str) -> str:
    c = COMP[intent]
    ref = g.pick(["", "", g.pick([order_ref, invoice_ref, claim_ref, user_ref])(g)])
    return g.pick(["我的", "", "我们的", "请问", "麻烦看下"]) + g.pick(c["zh_thing"]) + ref + g.pick(["", "，", " "]) + g.pick(c["zh_state"])


def core_en(g: Gen, intent: str) -> str:
    if g.chance(0.35):
        return compose_en(g, intent)
    return fill(g, g.pick(INTENT[intent]["ask"]))


def core_zh(g: Gen, intent: str) -> str:
    if g.chance(0.3):
        return compose_zh(g, intent)
    return fill(g, g.pick(INTENT[intent]["ask_zh"]))


def with_modifiers(g: Gen, intent: str, core: str, zh: bool) -> str:
    others = [i for i in INTENT if i != intent]
    k = g.r.random()
    if k < 0.12:
        neg = g.pick([n for n in NEG[intent] if (any("\u4e00" <= c <= "\u9fff" for c in n)) == zh] or NEG[intent])
        core = f"{neg}{'' if zh else ' '}{core}"
    elif k < 0.2:
        sec = g.pick(SECOND[g.pick(others)])
        core = f"{core}{'' if zh else '. '}{sec}" if not zh else f"{core}。{sec}"
    elif k < 0.3:
        # A minor second ask written like a main one but after a marker and shorter context: still the primary.
        other = g.pick(others)
        if zh:
            core = f"{core}。{g.pick(['另外', '顺便问下', '还有，', '另外，'])}{core_zh(g, other)}"
        else:
            core = f"{core}. {g.pick(['Also,', 'Separately,', 'Btw', 'P.S.', 'On another note,', 'Unrelated, but'])} {core_en(g, other)}"
    return core


def sig(g: Gen) -> str:
    name = f"{g.pick(FIRST)} {g.pick(LAST)}"
    lines = [name]
    if g.chance(0.7):
        lines.append(f"{g.pick(TITLES)} | {g.pick(COMPANIES)}")
    if g.chance(0.5):
        lines.append(g.pick([f"Tel: +{g.int(1, 99)} {g.digits(3)} {g.digits(7)}", f"Mobile: {g.digits(3)}-{g.digits(4)}-{g.digits(4)}", f"www.{g.pick(['acme', 'northwind', 'globex'])}.example"]))
    if g.chance(0.4):
        lines.append(g.pick(DISCLAIMERS))
    return "\n".join(lines)


def quoted(g: Gen) -> str:
    head = g.pick(["-----Original Message-----", f"On {g.pick(['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])}, {g.int(1, 28)} Nov 2026 at {g.int(8, 18)}:{g.int(10, 59)}, Support <support@{g.pick(DOMAINS)}> wrote:", "From: Customer Service\nSent: Monday\nSubject: RE: your request", "------------------ 原始邮件 ------------------"])
    body = g.pick(QUOTED)
    if head.startswith("On "):
        body = "\n".join("> " + line for line in body.split("\n"))
    return f"{head}\n{body}"


def core_any(g: Gen, intent: str, lang: str) -> str:
    return core_en(g, intent) if lang == "en" else core_zh(g, intent) if lang == "zh" else core_x(g, intent, lang)


def render(g: Gen, intent: str) -> str:
    """A ticket for `intent` in one of five languages, then (issue 43) sometimes wrapped: a second ask
    marked minor or the main one marked, an injected instruction or fake tag naming another intent, mail
    noise. The label is always the real, main ask."""
    k = g.r.random()
    lang = g.pick(ML.LANGS) if k < 0.36 else "zh" if k < 0.58 else "en"
    others = [i for i in INTENT if i != intent]
    if g.chance(0.04):
        # A second ask on its own, as the pre-step hands it over ("Also, ..."): the router records it.
        lang_m = lang if lang in R.MINOR else "en"
        return f"{g.pick(R.MINOR[lang_m])}{'' if lang_m in ('zh', 'ja') else ' '}{core_any(g, intent, lang)}"
    if lang in ML.LANGS:
        text = render_x(g, intent, lang)
    elif g.chance(0.12):
        text = R.mixed(g, lang, core_any(g, intent, lang), core_any(g, g.pick(others), lang))
    else:
        text = render_en_zh(g, intent)
    lang_w = lang if lang in R.INJECT else "en"
    if g.chance(0.1):
        text = R.inject(g, lang_w, text, intent, others)
    if g.chance(0.12):
        text = R.noisy(g, lang_w, text, *mail_people(g, lang_w), quoted_other=lambda: core_any(g, g.pick(others), lang_w))
    return text


def mail_people(g: Gen, lang: str) -> tuple[str, str, str]:
    if lang in ML.LANGS:
        return g.pick(ML.NAMES[lang]), g.pick(ML.ORGS[lang]), g.pick(ML.LEGAL[lang])
    return f"{g.pick(FIRST)} {g.pick(LAST)}", f"{g.pick(TITLES)} | {g.pick(COMPANIES)}", g.pick(DISCLAIMERS)


def fill_x(g: Gen, lang: str, t: str) -> str:
    return fill(g, t.replace("{prod}", g.pick(ML.PROD[lang])).replace("{when}", g.pick(ML.WHEN[lang])))


def core_x(g: Gen, intent: str, lang: str) -> str:
    if g.chance(0.3):
        leads, things = ML.PARTS[lang][intent]
        lead, thing = g.pick(leads), g.pick(things)
        if lang == "ja":
            return thing + lead
        return f"{lead} {thing}" if not lead.endswith(":") or g.chance(0.5) else f"{thing}: {lead.rstrip(':')}"
    return fill_x(g, lang, g.pick(ML.ASK[lang][intent]))


def render_x(g: Gen, intent: str, lang: str) -> str:
    """A Japanese, Spanish or German ticket: terse, plain, with context, or a formal mail with a signature."""
    core = core_x(g, intent, lang)
    if g.chance(0.14):
        core = R.mixed(g, lang, core, core_x(g, g.pick([i for i in INTENT if i != intent]), lang))
    sep = "" if lang == "ja" else " "
    style = g.r.random()
    if style < 0.25:
        return core if g.chance(0.6) else cap(core)
    if style < 0.55:
        return (g.pick(ML.GREET[lang]) + sep + cap(core) + sep + g.pick(ML.CLOSE[lang])).strip()
    if style < 0.75:
        ctx = g.pick(ML.CTX[lang])
        return f"{cap(core)}{'。' if lang == 'ja' else '.' if not core.endswith('?') else ''}{sep}{ctx}" if g.chance(0.5) else f"{ctx}{sep}{cap(core)}"
    name, org, legal = mail_people(g, lang)
    body = f"{g.pick(ML.GREET[lang])}\n\n{cap(core)}\n{g.pick(ML.CTX[lang]) if g.chance(0.5) else ''}\n\n{g.pick(ML.CLOSE[lang])}\n{name}\n{org}"
    return body + (f"\n{legal}" if g.chance(0.4) else "")


def render_en_zh(g: Gen, intent: str) -> str:
    lang = g.r.random()
    if lang < 0.08:
        return fill(g, g.pick(MIXED[intent])) + g.pick(["", "，谢谢", " thx", "？", "!!"])
    zh = lang < 0.42
    core = core_zh(g, intent) if zh else core_en(g, intent)
    core = with_modifiers(g, intent, core, zh)
    style = g.r.random()
    ctx = g.pick(INTENT[intent]["context_zh" if zh else "context"])
    ctx = fill(g, ctx)
    if zh:
        if style < 0.25:
            return core
        if style < 0.55:
            return (g.pick(ZH_GREET) + core + g.pick(["，", "。", "！", " "]) + g.pick(ZH_CLOSE)).strip()
        if style < 0.7:
            return g.pick(ZH_GREET) + ctx + core + "。" + g.pick(ANGRY_ZH)
        if style < 0.85:
            return f"{g.pick(ZH_GREET)}\n{ctx}{core}。\n{g.pick(ZH_CLOSE)}\n{sig(g)}"
        return f"{g.pick(ZH_GREET)}{core}。\n\n{quoted(g)}"
    if style < 0.18:  # terse
        s = core.rstrip("?.!")
        return g.pick([s, s.lower(), s + "?", s + " pls", s + "!!"])
    if style < 0.42:  # plain
        s = cap(core)
        return (g.pick(GREET).format(first=g.pick(FIRST)) + " " + s + g.pick([".", "?", "!", ""]) + " " + g.pick(CLOSE)).strip() if g.chance(0.6) else s
    if style < 0.55:  # angry
        s = cap(core)
        if g.chance(0.4):
            s = s.upper()
        return f"{g.pick(ANGRY_EN)} {s}{g.pick(['!!', '!!!', '?!', '.'])} {g.pick(ANGRY_EN) if g.chance(0.5) else ''}".strip()
    if style < 0.68:  # typos
        return typo(g, g.pick(["", "hi ", "hello "]) + core + g.pick(["", " thanks", " thx", " pls help"]))
    if style < 0.8:  # formal
        lead = g.pick(["I am writing with regard to the following matter.", "Further to our previous correspondence,", "We would be grateful for your assistance.", "I hope this message finds you well."])
        return f"{g.pick(GREET).format(first=g.pick(FIRST))}\n\n{lead} {ctx} {cap(core)}.\n\n{g.pick(['Kind regards,', 'Yours faithfully,', 'Best regards,', 'Sincerely,'])}\n{sig(g)}"
    # long e-mail with subject, context, signature and a quoted thread
    subj = g.pick(["", f"Subject: {g.pick(['Re: ', 'RE: ', 'Fwd: ', 'AW: ', ''])}{cap(core)[:40]}\n\n"])
    parts = [subj + g.pick(GREET).format(first=g.pick(FIRST)), "", f"{ctx} {cap(core)}." if g.chance(0.7) else f"{cap(core)}. {ctx}", "", g.pick(CLOSE), sig(g)]
    if g.chance(0.6):
        parts += ["", quoted(g)]
    return "\n".join(parts)


# ------------------------------------------------------------------------------------ unknown
OTHER_TICKETS = [
    # travel, telecom, banking, healthcare, utilities, education, real estate, insurance-free
    "my flight {flight} was moved to tomorrow, can I change my seat?", "I need to add a checked bag to my booking", "can I bring my dog on the train?", "the hotel room's air conditioning is broken",
    "please upgrade my data plan to unlimited", "how do I activate roaming for my trip to Japan", "my SIM card is not recognised by the phone", "the internet at home drops every evening",
    "I want to open a savings account", "my debit card was swallowed by the ATM", "what is the interest rate for a 30 year mortgage", "how do I set up a standing order to my landlord",
    "I'd like to book an appointment with Dr. Weber next week", "can I get my vaccination certificate", "the pharmacy didn't have my prescription", "please reschedule my dental cleaning",
    "the electricity meter reading on my bill looks wrong", "there is no hot water in apartment 4B", "when will the garbage be collected after the holiday", "the street light in front of my house is out",
    "how do I enrol my son in the spring semester", "where can I find the exam timetable", "my library card expired, can I renew it online", "is the campus gym open on Sundays",
    "I'd like to view the two-bedroom flat on Main Street", "the landlord hasn't returned my deposit", "can you recommend a moving company", "is parking included in the rent",
    "I want to cancel my gym membership", "can I pause my meal kit deliveries for two weeks", "the car wash damaged my side mirror", "my dry cleaning is ready?",
    "table for four at 8pm on Saturday please", "do you have vegan options on the menu", "can I change the date of my concert tickets", "lost my boarding pass at the gate",
]
IT_INTERNAL = [
    "the printer on the 3rd floor is jammed again", "how do I connect to the office Wi-Fi on my phone", "VPN client keeps asking to update, which version should I install", "my laptop is very slow after the update",
    "can I get admin rights to install Python", "Outlook is not syncing my calendar", "the projector in meeting room B has no signal", "I need a second monitor for my desk",
    "how do I set up my e-mail signature", "Teams crashes when I share my screen", "my disk is full, what can I delete", "please order a new keyboard for me, the space bar is stuck",
    "Excel macro gives runtime error 1004", "can someone install Adobe Reader on my machine", "how do I map the shared drive", "my headset microphone doesn't work in Zoom",
    "new starter on Monday needs a laptop", "how do I forward my desk phone to my mobile", "which software do we use for diagrams", "is there a licence for JetBrains left",
]
OFFICE = [
    "who is organising the team lunch on Friday?", "please approve my vacation request for next week", "when is the next all-hands meeting", "where do I find the holiday calendar",
    "can we move our 1:1 to Thursday", "the coffee machine in the kitchen is empty", "happy birthday Sarah!", "reminder: timesheets are due today", "has anyone seen my umbrella",
    "I'd like to apply for the marketing manager position", "please find my CV attached", "can I work from home on Tuesday", "the parking garage will be closed tomorrow",
]
SALES_SPAM = [
    "Congratulations! You have won a $1000 gift card, click here to claim", "Boost your website's SEO ranking in 7 days, guaranteed", "Buy 10,000 Instagram followers for $9",
    "Earn $5000 a week from home, no experience needed", "Limited offer: cheap Rolex replicas", "We are a leading software outsourcing company in Vietnam, can we schedule a call?",
    "Your mailbox is almost full, click the link to upgrade storage", "Invest in Bitcoin now and double your money", "Hi, I'm reaching out about a partnership opportunity for your brand",
    "I'd love to write a guest post for your blog", "Get a pre-approved loan with 0% interest today", "Dear friend, I am a prince and need your help to transfer funds",
    "Unsubscribe", "Please remove me from your mailing list", "Exclusive webinar invitation: AI for marketing leaders", "Are you the right person to talk to about cloud cost savings?",
    "恭喜您中奖了，请点击链接领取", "专业刷单，日结工资", "低价代开各类票据，联系微信", "本周特价，全场五折", "贷款秒批，无需抵押",
]
FEEDBACK = [
    "just wanted to say your team did a great job", "love the new design of the app!", "it would be nice to have a dark mode", "please add export to Excel", "your support agent Maria was very helpful",
    "do you have a student discount?", "are you hiring?", "do you ship to Iceland?", "what are your opening hours?", "where is your nearest store?", "do you sell gift cards?",
    "can I pay with PayPal?", "is this product available in blue?", "what's the warranty on the blender?", "do you have an affiliate program?", "how do I become a reseller?",
]
CHAT = [
    "hello", "hi", "thanks", "good night", "ok", "test", "lol", "who are you?", "what can you do?", "are you a robot?", "never mind", "sorry wrong chat", "good morning!", "how are you today?",
    "what's the weather like in {city} tomorrow?", "tell me a joke about {topic}", "recommend a movie for tonight", "what should I cook for dinner?", "who won the game last night",
    "write a poem about {topic}", "translate 'thank you' to {language}", "what time is it in {city}", "give me a fun fact about {topic}", "plan a 3-day trip to {city}", "best laptop for programming?",
    "what's {a} plus {b}", "how do I {task} in {lang}?", "write a {lang} function to {task}", "my {lang} code throws a null pointer exception, why?", "is {lang} better than {lang2}?",
    "{trivia}",
]
CHAT_ZH = [
    "{city_zh}明天天气怎么样", "今天会下雨吗", "讲个笑话", "推荐一部好看的电影", "晚饭吃什么好", "红烧肉怎么做", "帮我写一首诗", "地球到月亮有多远", "周末去哪里玩比较好", "你是谁", "你好", "谢谢", "在吗",
    "{a}加{b}等于多少", "帮我翻译一下这句话", "推荐几本书", "怎么减肥比较快", "{city_zh}有什么好吃的", "明天是星期几", "解释一下什么是区块链", "用{lang}怎么读取文件",
    "打印机卡纸了", "会议室投影仪连不上", "公司WiFi密码是多少", "下周团建去哪", "请假流程怎么走", "我想预约下周的体检", "手机流量套餐怎么升级", "房租什么时候交", "航班延误了怎么办", "孩子报名需要什么材料",
    "招聘岗位还有吗", "你们有实体店吗", "这个产品有蓝色的吗", "支持花呗吗", "新年快乐", "哈哈哈", "好的收到",
]
CITIES = ["Paris", "Tokyo", "London", "New York", "Berlin", "Sydney", "Shanghai", "Toronto", "Rome", "Madrid"]
CITIES_ZH = ["上海", "北京", "广州", "深圳", "成都", "杭州"]
TOPICS = ["cats", "dogs", "computers", "coffee", "mondays", "pirates", "math", "penguins", "doctors"]
CODE_TASKS = ["sort a list", "read a CSV file", "parse JSON", "write a unit test", "connect to a database", "center a div", "make an HTTP request", "model an orders table", "generate invoice PDFs",
              "write a regex for order numbers", "hash a password", "implement a login form", "handle a refund webhook", "retry on 503 errors"]
PROG_LANGS = ["Python", "JavaScript", "Java", "Go", "Rust", "C++", "TypeScript", "SQL", "Ruby"]
TRIVIA = ["What is the tallest mountain in the world?", "Who painted the Mona Lisa?", "How far is the moon?", "What year did World War II end?", "Who wrote Hamlet?", "What is the speed of light?", "Which ocean is the largest?"]
LANGUAGES = ["Spanish", "French", "German", "Japanese", "Korean", "Italian"]
GIBBERISH = ["qwertyuiop", "zzzz", "????", "...", "asdf asdf", "12345", "xyz", "aaaaaaa", "!!!", "??", "hmm", "jjjj kkkk", "a", "."]
IND_SUBJ = ["my flight", "the hotel booking", "my train ticket", "the rental car", "my savings account", "my electricity bill", "the gas meter", "the water supply", "my prescription",
            "my doctor's appointment", "my lease", "the apartment heating", "the school bus", "my son's enrolment", "my SIM card", "my mobile contract", "the home broadband", "my gym membership",
            "my car insurance quote", "the parking permit", "my library card", "the dentist visit", "my pension statement", "my bank statement", "my payslip", "the elevator in our building",
            "my passport application", "the concert tickets", "my table reservation", "the wedding venue", "my dog's vet appointment", "my visa appointment", "the boiler service", "my tax certificate"]
IND_PRED = ["was cancelled", "needs to be rescheduled", "is broken", "shows the wrong amount", "hasn't been renewed", "can I change it?", "who do I talk to about it?", "please send me a copy",
            "I need access to it", "is not working since yesterday", "can I move it to next week?", "what are the opening hours?", "how much does it cost?",
            "has it been approved?", "where can I download it?", "I want to cancel it", "can someone come and look at it?", "the password for it doesn't work"]
IND_SUBJ_ZH = ["我的航班", "酒店预订", "火车票", "房贷", "电费单", "燃气表", "处方药", "医院挂号", "租房合同", "暖气", "校车", "孩子入学", "手机卡", "宽带", "健身卡", "车险", "停车证", "工资条", "银行流水", "签证预约", "护照"]
IND_PRED_ZH = ["被取消了", "需要改期", "坏了", "金额不对", "怎么续", "找谁办理", "能给我一份复印件吗", "进不去", "从昨天开始用不了", "能改到下周吗", "几点开门", "多少钱", "审批通过了吗", "在哪里下载", "我要取消", "能派人来看看吗"]
SPAM_DELIVERY = ["USPS: your parcel is on hold, confirm your address at {url}", "DHL notice: shipment pending, pay 1.99 at {url}",
                 "Your account will be suspended, verify your details at {url}", "Your invoice is attached, open {url} to view", "Refund approved! Claim your tax refund at {url}",
                 "【快递】您的包裹地址有误，请点击{url}更新", "您的账户存在异常，请登录{url}验证"]


OFF_LEAD = ["how do I", "can you help me", "I want to", "is it possible to", "please", "who can", "I need to", "what's the best way to", "can I", "I'd like to"]
OFF_ACT = ["book a table for four", "renew my passport", "cancel my gym membership", "change my phone plan", "schedule a dentist appointment", "transfer my pension", "repair the washing machine",
           "register my car", "adopt a cat", "apply for a mortgage", "rent a flat downtown", "learn to play guitar", "file my taxes", "plan a wedding", "paint the living room", "enrol in evening classes",
           "find a plumber", "upgrade my broadband", "move my insurance policy", "get a library card", "buy concert tickets", "train for a marathon", "set up a home network", "write a cover letter",
           "configure the office printer", "get a new badge for the building", "book the meeting room", "request annual leave", "install VPN on my laptop", "get access to the shared drive"]
OFF_ZH = ["怎么办理护照", "健身卡怎么退", "附近有好吃的吗", "帮我订个会议室", "年假怎么申请", "打印机连不上", "工位换到哪了", "公司班车几点发车", "怎么预约体检", "周末去哪玩", "电脑能换新的吗", "怎么交社保", "食堂今天吃什么", "VPN怎么装"]


# Issue 15, third revision: more off-domain asks, composed (who/what x what is wanted) in English and
# Chinese, and whole requests in other languages (the router answers `unknown` to them).
OFF_EXTRA_SUBJ = ["the boiler", "my lawn mower", "the dishwasher", "our office plants", "the yoga class", "my piano lessons", "the swimming pool", "the community garden", "my bike repair",
                  "the tenant meeting", "my car service", "the kids' football practice", "the vending machine", "the fire drill", "the coffee order for the team", "my tax return",
                  "the company car", "the badge reader", "our Jira board", "the CI pipeline", "the staging database", "my Slack status", "the team offsite", "the new hire's laptop",
                  "my health insurance card", "the pharmacy pickup", "my train pass", "my phone bill", "the tent rental", "the catering quote", "the photo shoot", "the translation job"]
OFF_EXTRA_PRED = ["is making a strange noise", "can we move it to Friday?", "who is in charge of it?", "how much would it cost?", "is it still happening?", "can you send someone?",
                  "I need a quote", "please book it for me", "what are the options?", "does anyone know how it works?", "keeps failing since this morning", "needs approval from my manager"]
OFF_EXTRA_ZH = ["热水器", "小区门禁", "停车位", "物业费", "羽毛球场", "瑜伽课", "驾照体检", "孩子的兴趣班", "公司年会", "团建", "工牌", "测试环境", "代码评审", "个税申报", "公积金", "体检报告", "机票改签"]
OFF_EXTRA_ZH_PRED = ["怎么弄", "找谁", "坏了，能来修吗", "能改时间吗", "多少钱", "还有名额吗", "什么时候开始", "需要准备什么", "怎么申请"]
OFF_OTHER_LANGS = ["¿Dónde puedo renovar mi pasaporte?", "Quisiera reservar una mesa para cuatro esta noche.", "Mein Fahrrad muss repariert werden, haben Sie Zeit?", "Wann ist das Schwimmbad geöffnet?",
                   "Je cherche un plombier pour demain matin.", "Est-ce que le cours de yoga a lieu ce soir ?", "Quanto custa o seguro do carro?", "Preciso marcar uma consulta no dentista.",
                   "明日の会議室を予約したいです。", "駐車場は何時まで使えますか？", "내일 치과 예약하고 싶어요.", "Quando apre la palestra domenica?", "Сколько стоит ремонт стиральной машины?"]


def unknown_extra(g: Gen) -> str:
    k = g.r.random()
    if k < 0.45:
        return f"{cap(g.pick(OFF_EXTRA_SUBJ))} {g.pick(OFF_EXTRA_PRED)}" if g.chance(0.6) else f"{cap(g.pick(OFF_EXTRA_PRED).rstrip('?'))} - {g.pick(OFF_EXTRA_SUBJ)}"
    if k < 0.8:
        return g.pick(OFF_EXTRA_ZH) + g.pick(OFF_EXTRA_ZH_PRED)
    return g.pick(OFF_OTHER_LANGS)


def unknown_core(g: Gen) -> str:
    if g.chance(0.15):
        return unknown_extra(g)
    if g.chance(0.12):
        if g.chance(0.3):
            return g.pick(OFF_ZH)
        return f"{g.pick(OFF_LEAD)} {g.pick(OFF_ACT)}{g.pick(['?', '', '.', ' asap'])}"
    return unknown_core_listed(g)


def unknown_core_listed(g: Gen) -> str:
    k = g.r.random()
    fmt = dict(city=g.pick(CITIES), topic=g.pick(TOPICS), task=g.pick(CODE_TASKS), language=g.pick(LANGUAGES), a=g.int(2, 999), b=g.int(2, 999), trivia=g.pick(TRIVIA), city_zh=g.pick(CITIES_ZH),
               flight=f"{g.pick(['LH', 'BA', 'CA', 'UA', 'AF'])}{g.int(100, 9999)}")
    lang, lang2 = g.r.sample(PROG_LANGS, 2)
    fmt.update(lang=lang, lang2=lang2)
    if k < 0.12:
        return g.pick(OTHER_TICKETS).format(**fmt)
    if k < 0.2:
        if g.chance(0.6):
            return f"{cap(g.pick(IND_SUBJ))} {g.pick(IND_PRED)}" if g.chance(0.5) else f"{cap(g.pick(IND_PRED).rstrip('?'))}: {g.pick(IND_SUBJ)}"
        return g.pick(IND_SUBJ_ZH) + g.pick(IND_PRED_ZH)
    if k < 0.34:
        return g.pick(IT_INTERNAL)
    if k < 0.42:
        return g.pick(OFFICE)
    if k < 0.54:
        if g.chance(0.3):
            return g.pick(SPAM_DELIVERY).format(url=g.pick(["http://bit.ly/3xYz", "https://secure-verify.example.net/a", "hxxp://dhl-track.info", "http://t.cn/abc"]))
        return g.pick(SALES_SPAM)
    if k < 0.64:
        return g.pick(FEEDBACK)
    if k < 0.8:
        return g.pick(CHAT).format(**fmt)
    if k < 0.93:
        return g.pick(CHAT_ZH).format(**fmt)
    if k < 0.97:
        return g.pick(OTHER_LANG)
    return g.pick(GIBBERISH) if g.chance(0.5) else random_prose(g)


def unknown_text(g: Gen) -> str:
    """An off-domain ticket; issue 43: also in ja/es/de, injections with no real ask, mail with nothing to
    route (out-of-office, newsletters, bare signatures), and off-domain asks wrapped in injections or noise."""
    k = g.r.random()
    lang = g.pick(["en", "zh", *ML.LANGS])
    if k < 0.05:
        pool = g.pick([ML.FEEDBACK, ML.OTHER_INDUSTRY])
        text = g.case(g.pick(pool[lang])) if lang == "en" else g.pick(pool[lang])
    elif k < 0.27:
        text = unknown_x(g, g.pick(ML.LANGS))
    elif k < 0.36:
        return R.inject_only(g, lang, [i for i in INTENT])
    elif k < 0.41:
        return R.no_ask(g, lang, *mail_people(g, lang))
    else:
        text = unknown_text_en_zh(g)
        lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in text) else "en"
    if g.chance(0.05):
        text = R.inject(g, lang, text, "unknown", list(INTENT))
    if g.chance(0.1):
        text = R.noisy(g, lang, text, *mail_people(g, lang), quoted_other=None)
    return text


def unknown_x(g: Gen, lang: str) -> str:
    if g.chance(0.3):
        subj, pred = g.pick(ML.UNK_SUBJ[lang]), g.pick(ML.UNK_PRED[lang])
        core = subj + pred if lang == "ja" else f"{cap(subj)} {pred}"
    else:
        core = g.pick(ML.UNKNOWN[lang])
    if g.chance(0.1):
        core = R.mixed(g, lang, core, g.pick(ML.UNKNOWN[lang]))
    sep = "" if lang == "ja" else " "
    if g.chance(0.5):
        return cap(core)
    return (g.pick(ML.GREET[lang]) + sep + cap(core) + sep + g.pick(ML.CLOSE[lang])).strip()


def unknown_text_en_zh(g: Gen) -> str:
    core = unknown_core(g)
    zh = any("\u4e00" <= c <= "\u9fff" for c in core)
    style = g.r.random()
    if style < 0.35 or len(core) < 12:
        return g.case(core) if not zh and g.chance(0.3) else core
    if zh:
        return g.pick(ZH_GREET) + core + g.pick(["", "，谢谢", "。" + g.pick(ZH_CLOSE)])
    if style < 0.55:
        return (g.pick(GREET).format(first=g.pick(FIRST)) + " " + cap(core) + " " + g.pick(CLOSE)).strip()
    if style < 0.65:
        return typo(g, core)
    if style < 0.75:
        return f"{g.pick(ANGRY_EN)} {cap(core)}!!"
    parts = [g.pick(GREET).format(first=g.pick(FIRST)), "", cap(core) + ".", "", g.pick(CLOSE), sig(g)]
    if g.chance(0.5):
        parts += ["", quoted(g)]
    return "\n".join(parts)


def make_template(intent: str):
    def t(g: Gen) -> str:
        return render(g, intent)

    t.__name__ = f"tpl_{intent}"
    return t


TEMPLATES = {intent: [make_template(intent)] for intent in INTENT}
TEMPLATES["unknown"] = [unknown_text]


def generate(seed: int = DEFAULT_SEED, per_label: int = PER_LABEL) -> list[Example]:
    """The training examples, in a deterministic order (unknown gets UNKNOWN_SHARE × per_label)."""
    rows = generate_examples({k: v for k, v in TEMPLATES.items() if k != "unknown"}, [l for l in LABELS if l != "unknown"], seed, per_label)
    rows += generate_examples({"unknown": TEMPLATES["unknown"]}, ["unknown"], seed + 1, int(per_label * UNKNOWN_SHARE))
    return rows


if __name__ == "__main__":
    generator_main(__doc__, DEFAULT_SEED, generate, Path(__file__).with_name("train.jsonl"))
