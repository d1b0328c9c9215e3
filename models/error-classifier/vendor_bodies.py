"""More varied bodies for the error-payload generator (issue 15, third revision).

`ok`: plain resource bodies shaped like real APIs' list/get answers (payments, code hosting, messaging,
commerce, CRM, clouds, Chinese platforms), paginated lists in several conventions (cursor, links, HAL,
JSON:API, OData, Link-style), GraphQL `data` answers, XML/SOAP/CSV/plain-text ok answers; field names in
snake/camel/Pascal case, ids of many shapes (uuid, prefixed base62, long numbers, ARNs, gids, resource
paths, ObjectIds, ULIDs), null error fields inside success bodies (`"error_code": null`), sizes from one
field to long lists. Everything is procedural: vendors' *shapes*, with generated values.

Errors: GraphQL error envelopes and RFC 7807 problem documents for every label (so the envelope carries
no label), and each label's message in several languages (Japanese, Korean, Spanish, Portuguese,
German, French, Russian) and in casual Chinese.

Written without reading eval.jsonl.
"""
from __future__ import annotations

import json
import string
from typing import Any, Callable

from common import Gen, dumps, random_object, random_value

B62 = string.ascii_letters + string.digits


def key_style(g: Gen) -> Callable[[str], str]:
    """One key convention for a whole body: snake_case, camelCase or PascalCase."""
    k = g.r.random()

    def camel(s: str) -> str:
        parts = s.split("_")
        return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])

    if k < 0.5:
        return lambda s: s
    if k < 0.85:
        return camel
    return lambda s: "".join(p[:1].upper() + p[1:] for p in s.split("_"))


def styled(g: Gen, obj: Any, style: Callable[[str], str] | None = None) -> Any:
    style = style or key_style(g)
    if isinstance(obj, dict):
        return {style(k) if not k.startswith(("@", "_", "$")) else k: styled(g, v, style) for k, v in obj.items()}
    if isinstance(obj, list):
        return [styled(g, v, style) for v in obj]
    return obj


def any_id(g: Gen) -> Any:
    k = g.r.random()
    if k < 0.14:
        return g.uuid()
    if k < 0.28:
        return g.pick(["cus_", "ch_", "pi_", "sub_", "acct_", "prod_", "usr_", "ord_", "txn_", "evt_", "inv_", "msg_", "team_", "ws_"]) + g.alnum(g.int(8, 24), B62)
    if k < 0.42:
        return g.int(1, 10 ** g.int(3, 15))
    if k < 0.5:
        return str(g.int(10 ** 8, 10 ** 18))
    if k < 0.58:
        return g.hex(24)
    if k < 0.64:
        return g.alnum(26, "0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    if k < 0.7:
        return f"arn:aws:{g.pick(['s3', 'lambda', 'sqs', 'dynamodb', 'iam', 'sns'])}:{g.pick(['us-east-1', 'eu-west-1', 'ap-southeast-1'])}:{g.digits(12)}:{g.pick(['function', 'table', 'queue', 'role', 'topic'])}/{g.alnum(8).lower()}"
    if k < 0.76:
        return f"gid://{g.pick(['shopify', 'shop', 'app'])}/{g.pick(['Order', 'Product', 'Customer', 'Variant'])}/{g.int(1, 10 ** 13)}"
    if k < 0.82:
        return g.pick(["SM", "AC", "MM", "CA", "PN"]) + g.hex(32)
    if k < 0.88:
        return f"{g.alnum(3).upper()}-{g.int(1, 99999)}"
    if k < 0.94:
        return g.pick(["001", "003", "006", "500", "a0B"]) + g.alnum(15, B62)
    return g.alnum(g.int(6, 12), string.ascii_lowercase + string.digits)


PEOPLE = ["Alice Chen", "Bob Okafor", "María García", "王芳", "李强", "Jean Dupont", "Yuki Tanaka", "Priya Nair", "Olu Adeyemi", "Sven Berg", "김민수", "Ana Souza", "Hans Weber", "Fatima Zahra"]
PLACES = ["Seattle", "São Paulo", "Shenzhen", "München", "Lagos", "Toronto", "Osaka", "Paris", "Bengaluru", "Warszawa", "杭州", "Dublin"]
WORDS = ["Standard plan", "Blue T-shirt", "Quarterly report", "Kitchen renovation", "Onboarding", "Fix login flow", "Spring sale", "Invoice batch", "Migration", "Team offsite", "Widget Pro", "无线耳机", "年度合同"]


def money(g: Gen) -> Any:
    v = g.int(0, 10 ** g.int(2, 7))
    return g.pick([v, round(v / 100, 2), f"{v / 100:.2f}", str(v)])


def ts(g: Gen) -> Any:
    return g.pick([g.iso_ts(), g.int(1500000000, 1900000000), g.date(), f"{g.pick(['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])}, {g.int(1, 28):02d} {g.pick(['Jan', 'Mar', 'Jun', 'Oct', 'Dec'])} {g.int(2022, 2027)} {g.int(0, 23):02d}:{g.int(0, 59):02d}:{g.int(0, 59):02d} +0000"])


def null_errors(g: Gen, body: dict) -> dict:
    """Success bodies often carry empty error fields; they must not read as errors."""
    if g.chance(0.3):
        body[g.pick(["error_code", "error_message", "error", "errors", "failure_reason", "last_error", "errorCode", "warnings", "fault"])] = g.pick([None, None, [], "", {}])
    return body


def ok_payments(g: Gen) -> str:
    obj = g.pick(["charge", "refund", "payment_intent", "customer", "balance_transaction", "payout", "subscription", "invoice"])
    body = {"id": any_id(g), "object": obj, "amount": g.int(50, 10 ** 6), "currency": g.pick(["usd", "eur", "gbp", "cny", "jpy"]), "created": g.int(1500000000, 1900000000),
            "status": g.pick(["succeeded", "paid", "active", "pending", "available", "in_transit", "trialing"]), "livemode": g.chance(0.5), "metadata": {} if g.chance(0.6) else {"order": str(any_id(g))}}
    if g.chance(0.4):
        body.update({"failure_code": None, "failure_message": None, "refunded": False, "captured": True})
    if g.chance(0.4):
        body["description"] = g.pick(WORDS)
    return dumps(g, body)


def ok_code_host(g: Gen) -> str:
    owner = g.pick(["octo-org", "acme", "dev-lee", "kafka-tools", "mariag", "zhangsan"])
    repo = g.pick(["api", "web", "infra", "docs", "sdk-python", "mobile"])
    k = g.r.random()
    if k < 0.35:
        body: Any = {"id": g.int(1, 10 ** 9), "node_id": "R_" + g.alnum(12, B62), "name": repo, "full_name": f"{owner}/{repo}", "private": g.chance(0.5), "owner": {"login": owner, "id": g.int(1, 10 ** 8), "type": g.pick(["User", "Organization"])},
                     "html_url": f"https://github.com/{owner}/{repo}", "description": g.pick([None, "Service API", "Docs site", "内部工具"]), "fork": False, "default_branch": g.pick(["main", "master", "develop"]), "stargazers_count": g.int(0, 9000), "open_issues_count": g.int(0, 300), "pushed_at": g.iso_ts()}
    elif k < 0.7:
        body = [{"number": g.int(1, 9000), "title": g.pick(WORDS), "state": g.pick(["open", "closed"]), "user": {"login": g.pick(["bot", "alice", "lee", "m-garcia"])}, "labels": [{"name": g.pick(["bug", "enhancement", "docs"])}] if g.chance(0.5) else [],
                 "comments": g.int(0, 40), "created_at": g.iso_ts(), "draft": g.chance(0.2)} for _ in range(g.int(1, 4))]
    else:
        body = {"sha": g.hex(40), "commit": {"author": {"name": g.pick(PEOPLE), "date": g.iso_ts()}, "message": g.pick(["Fix typo", "Bump deps", "Add retries to client", "Merge pull request #" + str(g.int(1, 999))])}, "parents": [{"sha": g.hex(40)}], "stats": {"additions": g.int(0, 500), "deletions": g.int(0, 500)}}
    return dumps(g, body)


def ok_messaging(g: Gen) -> str:
    sid = g.pick(["SM", "MM"]) + g.hex(32)
    acct = "AC" + g.hex(32)
    body = {"sid": sid, "account_sid": acct, "from": "+1" + g.digits(10), "to": "+" + g.digits(g.int(10, 13)), "body": g.pick(["Your code is " + g.digits(6), "Your order has shipped", "Reminder: appointment tomorrow at 10", "您的验证码是" + g.digits(6)]),
            "status": g.pick(["queued", "sending", "sent", "delivered", "accepted", "scheduled"]), "direction": g.pick(["outbound-api", "inbound"]), "num_segments": str(g.int(1, 3)), "num_media": "0",
            "price": g.pick([None, "-0.00790"]), "price_unit": "USD", "api_version": "2010-04-01", "date_created": ts(g), "date_sent": g.pick([None, ts(g)]), "date_updated": ts(g),
            "uri": f"/2010-04-01/Accounts/{acct}/Messages/{sid}.json", "subresource_uris": {"media": f"/2010-04-01/Accounts/{acct}/Messages/{sid}/Media.json"}}
    if g.chance(0.7):
        body.update({"error_code": None, "error_message": None})
    if g.chance(0.3):
        body = {"channel": "C" + g.alnum(10).upper(), "ts": f"{g.int(1600000000, 1900000000)}.{g.digits(6)}", "ok": True, "message": {"type": "message", "text": g.pick(WORDS), "user": "U" + g.alnum(10).upper()}}
    return dumps(g, body)


def ok_commerce(g: Gen) -> str:
    lines = [{"id": g.int(10 ** 9, 10 ** 13), "title": g.pick(WORDS), "quantity": g.int(1, 5), "price": f"{g.int(1, 999)}.{g.digits(2)}", "sku": g.alnum(8).upper(), "variant_id": g.int(10 ** 9, 10 ** 13)} for _ in range(g.int(1, 4))]
    order = {"id": g.int(10 ** 9, 10 ** 13), "name": f"#{g.int(1000, 99999)}", "email": f"{g.alnum(6).lower()}@example.com", "created_at": g.iso_ts(), "currency": g.pick(["USD", "EUR", "CAD", "AUD"]), "total_price": f"{g.int(1, 9999)}.{g.digits(2)}",
             "financial_status": g.pick(["paid", "pending", "authorized", "partially_refunded"]), "fulfillment_status": g.pick([None, "fulfilled", "partial"]), "line_items": lines, "tags": g.pick(["", "wholesale", "vip, repeat"]), "cancelled_at": None}
    k = g.r.random()
    if k < 0.4:
        return dumps(g, {"order": order})
    if k < 0.7:
        return dumps(g, {"orders": [order] * 1 if g.chance(0.5) else [order, {**order, "id": g.int(10 ** 9, 10 ** 13), "name": f"#{g.int(1000, 99999)}"}]})
    return dumps(g, {"product": {"id": g.int(10 ** 9, 10 ** 13), "title": g.pick(WORDS), "vendor": g.pick(["Acme", "Globex", "本地工坊"]), "status": g.pick(["active", "draft", "archived"]), "variants": [{"id": g.int(10 ** 9, 10 ** 13), "price": money(g), "inventory_quantity": g.int(0, 500)}]}})


def ok_crm(g: Gen) -> str:
    typ = g.pick(["Account", "Contact", "Opportunity", "Case", "Lead"])
    recs = [{"attributes": {"type": typ, "url": f"/services/data/v{g.int(50, 62)}.0/sobjects/{typ}/{any_id(g)}"}, "Id": g.pick(["001", "003", "006", "500", "00Q"]) + g.alnum(15, B62), "Name": g.pick(PEOPLE + WORDS),
             g.pick(["StageName", "Status", "Industry", "Rating"]): g.pick(["Closed Won", "New", "Working", "Technology", "Hot"]), "LastModifiedDate": g.iso_ts()} for _ in range(g.int(0, 3))]
    k = g.r.random()
    if k < 0.6:
        return dumps(g, {"totalSize": len(recs), "done": g.chance(0.8), "records": recs} | ({"nextRecordsUrl": f"/services/data/v58.0/query/01g{g.alnum(15, B62)}-2000"} if g.chance(0.2) else {}))
    if k < 0.8:
        return dumps(g, {"id": g.pick(["001", "003"]) + g.alnum(15, B62), "success": True, "errors": []})
    return dumps(g, {"properties": {"email": f"{g.alnum(5).lower()}@example.org", "firstname": g.pick(PEOPLE).split(" ")[0], "lifecyclestage": g.pick(["lead", "customer"])}, "id": str(g.int(1, 10 ** 11)), "createdAt": g.iso_ts(), "archived": False})


def ok_aws(g: Gen) -> str:
    k = g.r.random()
    if k < 0.2:
        return dumps(g, {"Item": {"pk": {"S": f"{g.pick(['USER', 'ORDER', 'TENANT'])}#{any_id(g)}"}, "sk": {"S": g.pick(["PROFILE", "META", "v0"])}, "count": {"N": str(g.int(0, 999))}, "active": {"BOOL": g.chance(0.5)}}} if g.chance(0.6) else
                     {"Items": [{"id": {"S": str(any_id(g))}} for _ in range(g.int(0, 3))], "Count": g.int(0, 3), "ScannedCount": g.int(3, 50)})
    if k < 0.35:
        return dumps(g, {"MessageId": g.uuid(), "MD5OfMessageBody": g.hex(32), "SequenceNumber": g.digits(20)} if g.chance(0.5) else {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": json.dumps({"ok": True})})
    if k < 0.55:
        items = "".join(f"<Contents><Key>{g.pick(['logs', 'exports', 'img'])}/{g.alnum(8).lower()}.{g.pick(['gz', 'json', 'png'])}</Key><LastModified>{g.iso_ts()}</LastModified><ETag>&quot;{g.hex(32)}&quot;</ETag><Size>{g.int(1, 10 ** 7)}</Size><StorageClass>STANDARD</StorageClass></Contents>" for _ in range(g.int(1, 3)))
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>{g.pick(["prod-data", "acme-assets"])}</Name><Prefix></Prefix><KeyCount>{g.int(1, 3)}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>{items}</ListBucketResult>'
    if k < 0.7:
        return (f'<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>{g.uuid()}</requestId><reservationSet><item><reservationId>r-{g.hex(17)}</reservationId><instancesSet><item><instanceId>i-{g.hex(17)}</instanceId>'
                f'<instanceState><code>16</code><name>running</name></instanceState><instanceType>{g.pick(["t3.micro", "m5.large"])}</instanceType></item></instancesSet></item></reservationSet></DescribeInstancesResponse>') if g.chance(0.5) else (
                f'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::{g.digits(12)}:user/{g.pick(["ci", "deploy"])}</Arn><UserId>AIDA{g.alnum(16).upper()}</UserId><Account>{g.digits(12)}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>{g.uuid()}</RequestId></ResponseMetadata></GetCallerIdentityResponse>')
    return dumps(g, {"FunctionName": g.pick(["resize", "ingest", "notify"]), "FunctionArn": any_id(g), "Runtime": g.pick(["nodejs20.x", "python3.12"]), "State": "Active", "LastUpdateStatus": "Successful", "MemorySize": g.pick([128, 512, 1024])} if g.chance(0.5) else
                 {"QueueUrls": [f"https://sqs.us-east-1.amazonaws.com/{g.digits(12)}/{g.alnum(6).lower()}" for _ in range(g.int(1, 3))]})


def ok_gcp(g: Gen) -> str:
    proj = g.pick(["acme-prod", "data-lake-123", "my-project"])
    k = g.r.random()
    if k < 0.3:
        return dumps(g, {"kind": "compute#instance", "id": g.digits(19), "name": f"vm-{g.alnum(5).lower()}", "zone": f"https://www.googleapis.com/compute/v1/projects/{proj}/zones/{g.pick(['us-central1-a', 'europe-west1-b'])}", "status": g.pick(["RUNNING", "TERMINATED", "STAGING"]),
                         "machineType": "e2-medium", "selfLink": f"https://www.googleapis.com/compute/v1/projects/{proj}/zones/us-central1-a/instances/vm", "labels": {"env": g.pick(["prod", "dev"])}})
    if k < 0.5:
        return dumps(g, {"kind": "bigquery#queryResponse", "schema": {"fields": [{"name": "day", "type": "DATE"}, {"name": "orders", "type": "INTEGER"}]}, "jobReference": {"projectId": proj, "jobId": "job_" + g.alnum(20, B62)}, "totalRows": str(g.int(1, 5)),
                         "rows": [{"f": [{"v": g.date()}, {"v": str(g.int(0, 9999))}]} for _ in range(g.int(1, 3))], "jobComplete": True, "cacheHit": g.chance(0.5)})
    if k < 0.65:
        return dumps(g, {"messageIds": [g.digits(16) for _ in range(g.int(1, 3))]})
    if k < 0.8:
        return dumps(g, {"name": f"projects/{proj}/locations/{g.pick(['us-central1', 'asia-east1'])}/services/{g.pick(['api', 'web'])}", "uid": g.uuid(), "generation": str(g.int(1, 99)), "createTime": g.iso_ts(), "uri": f"https://api-{g.alnum(10).lower()}-uc.a.run.app", "reconciling": False})
    return dumps(g, {"items": [{"kind": "storage#bucket", "id": f"{proj}-{g.alnum(4).lower()}", "location": "US", "storageClass": "STANDARD", "timeCreated": g.iso_ts()} for _ in range(g.int(1, 3))], "kind": "storage#buckets"} | ({"nextPageToken": g.alnum(30, B62)} if g.chance(0.3) else {}))


def ok_azure(g: Gen) -> str:
    sub = g.uuid()
    k = g.r.random()
    if k < 0.4:
        rg = g.pick(["rg-app", "rg-data", "prod-weu"])
        kind, name = g.pick([("Microsoft.Compute/virtualMachines", "vm-web-01"), ("Microsoft.Storage/storageAccounts", "stacme" + g.alnum(6).lower()), ("Microsoft.Web/sites", "app-orders"), ("Microsoft.Sql/servers/databases", "sqldb-main")])
        res = {"id": f"/subscriptions/{sub}/resourceGroups/{rg}/providers/{kind}/{name}", "name": name, "type": kind, "location": g.pick(["westeurope", "eastus2", "chinanorth3"]), "tags": {} if g.chance(0.5) else {"owner": "team-a"}, "properties": {"provisioningState": "Succeeded"}}
        return dumps(g, res if g.chance(0.6) else {"value": [res], "nextLink": None})
    if k < 0.75:
        return dumps(g, {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users", "value": [{"id": g.uuid(), "displayName": g.pick(PEOPLE), "mail": f"{g.alnum(5).lower()}@contoso.com", "jobTitle": g.pick([None, "Engineer", "Manager"])} for _ in range(g.int(1, 3))]}
                     | ({"@odata.nextLink": "https://graph.microsoft.com/v1.0/users?$skiptoken=" + g.alnum(20, B62)} if g.chance(0.3) else {}))
    return dumps(g, {"status": g.pick(["Succeeded", "Completed"]), "createdDateTime": g.iso_ts(), "lastUpdatedDateTime": g.iso_ts(), "analyzeResult": {"apiVersion": "2024-11-30", "pages": [{"pageNumber": 1, "width": 8.5, "height": 11}]}} if g.chance(0.5) else
                 {"id": g.uuid(), "status": "Running", "properties": {"runId": g.uuid(), "durationInMs": g.int(1, 99999)}})


def ok_cn_platforms(g: Gen) -> str:
    k = g.r.random()
    if k < 0.2:
        return dumps(g, {"errcode": 0, "errmsg": "ok", g.pick(["openid", "userid", "unionid"]): g.alnum(28, B62), g.pick(["nickname", "name"]): g.pick(["小明", "王芳", "Lee"]), "department": [g.int(1, 99)]})
    if k < 0.4:
        return dumps(g, {"alipay_trade_query_response": {"code": "10000", "msg": "Success", "trade_no": g.digits(28), "out_trade_no": str(any_id(g)), "trade_status": g.pick(["TRADE_SUCCESS", "WAIT_BUYER_PAY", "TRADE_FINISHED"]), "total_amount": f"{g.int(1, 9999)}.00"}, "sign": g.alnum(60, B62 + "+/")})
    if k < 0.6:
        return dumps(g, {"code": 0, "msg": "success", "data": {"items": [{"open_id": "ou_" + g.hex(32), "name": g.pick(["张三", "李四", "Amy"]), "status": {"is_activated": True}} for _ in range(g.int(1, 3))], "has_more": g.chance(0.4), "page_token": g.pick(["", g.alnum(20, B62)])}})
    if k < 0.8:
        return dumps(g, {"Response": {"RequestId": g.uuid(), "TotalCount": g.int(0, 40), g.pick(["InstanceSet", "Instances", "DataSet"]): [{"InstanceId": f"ins-{g.alnum(8).lower()}", "InstanceName": g.pick(["web-1", "测试机"]), "InstanceState": g.pick(["RUNNING", "STOPPED"]), "Zone": "ap-guangzhou-3"} for _ in range(g.int(0, 2))]}})
    return dumps(g, {"RequestId": g.uuid().upper(), "TotalCount": g.int(0, 30), "PageNumber": g.int(1, 5), "PageSize": g.pick([10, 20, 50]), "Instances": {"Instance": [{"InstanceId": f"i-{g.alnum(20).lower()}", "Status": g.pick(["Running", "Stopped"]), "RegionId": "cn-hangzhou"} for _ in range(g.int(0, 2))]}})


def page_wrap(g: Gen, items: list) -> Any:
    k = g.r.random()
    if k < 0.2:
        return {"data": items, "has_more": g.chance(0.5), "next_cursor": g.pick([None, g.alnum(16, B62)])}
    if k < 0.35:
        return {"data": [{"type": g.pick(["orders", "users", "articles"]), "id": str(any_id(g)), "attributes": it} for it in items], "links": {"self": "/v1/items?page[number]=1", "next": "/v1/items?page[number]=2"}, "meta": {"total": g.int(len(items), 900)}}
    if k < 0.5:
        return {"_links": {"self": {"href": "/items?page=1"}, "next": {"href": "/items?page=2"}}, "_embedded": {g.pick(["items", "orders", "users"]): items}, "page": {"size": 20, "totalElements": g.int(0, 999), "number": 0}}
    if k < 0.62:
        return {"content": items, "pageable": {"pageNumber": 0, "pageSize": 20}, "totalElements": g.int(0, 999), "totalPages": g.int(1, 50), "last": g.chance(0.3), "first": True, "empty": not items}
    if k < 0.75:
        return {"results": items, "count": g.int(len(items), 900), "next": g.pick([None, "https://api.example.net/v2/items/?offset=20&limit=20"]), "previous": None}
    if k < 0.88:
        return {"items": items, "total": g.int(0, 999), "limit": 20, "offset": g.int(0, 200)}
    return items


def ok_paginated(g: Gen) -> str:
    style = key_style(g)
    items = [styled(g, {"id": any_id(g), **{k: v for k, v in random_object(g, 1).items()}}, style) for _ in range(g.int(0, 5))]
    body = page_wrap(g, items)
    return dumps(g, null_errors(g, body) if isinstance(body, dict) else body)


def ok_single(g: Gen) -> str:
    """One resource by id: procedural fields plus realistic ones, one key convention."""
    base = {"id": any_id(g), g.pick(["name", "title", "display_name", "label"]): g.pick(PEOPLE + WORDS + PLACES), g.pick(["created_at", "created", "inserted_at", "date_created"]): ts(g)}
    base.update(random_object(g, 1))
    if g.chance(0.4):
        base[g.pick(["owner", "customer", "author", "assignee"])] = {"id": any_id(g), "name": g.pick(PEOPLE)}
    if g.chance(0.3):
        base[g.pick(["amount", "total", "price", "balance"])] = money(g)
    body = styled(g, null_errors(g, base))
    if g.chance(0.3):
        body = {g.pick(["data", "result", "resource", "item", g.pick(["user", "order", "customer", "project", "file"])]): body}
    return dumps(g, body)


def gql_data(g: Gen) -> Any:
    root = g.pick(["viewer", "order", "customer", "repository", "node", "shop", "products", "search", "me", "account"])
    inner: Any = styled(g, {"id": str(any_id(g)), **random_object(g, 1)}, key_style(g))
    if g.chance(0.4):
        inner = {"edges": [{"node": styled(g, {"id": str(any_id(g)), **random_object(g, 1)}), "cursor": g.alnum(12, B62)} for _ in range(g.int(0, 3))], "pageInfo": {"hasNextPage": g.chance(0.5), "endCursor": g.alnum(12, B62)}}
    return {root: inner}


def ok_graphql(g: Gen) -> str:
    body: dict = {"data": gql_data(g)}
    if g.chance(0.25):
        body["extensions"] = g.pick([{"cost": {"requestedQueryCost": g.int(1, 100), "throttleStatus": {"maximumAvailable": 1000.0, "currentlyAvailable": g.int(100, 999)}}}, {"tracing": {"version": 1, "duration": g.int(10 ** 5, 10 ** 8)}}, {"requestId": g.uuid()}])
    return dumps(g, body)


def ok_text_formats(g: Gen) -> str:
    k = g.r.random()
    if k < 0.3:
        cols = g.r.sample(["id", "name", "email", "amount", "status", "created_at", "country", "qty", "sku", "region"], g.int(2, 5))
        rows = [",".join(str(g.pick([any_id(g), g.pick(PEOPLE), money(g), g.pick(["paid", "open", "shipped"]), g.date(), g.int(0, 99)])) for _ in cols) for _ in range(g.int(1, 5))]
        return "\n".join([",".join(cols)] + rows)
    if k < 0.5:
        return g.pick(["OK", "Accepted", "202 Accepted", "Created", "queued", "true", "1", "success", "done", "pong", "Message accepted for delivery", "Thank you. Your request has been received.", f"Queued. id={any_id(g)}", "已受理", "处理成功"])
    if k < 0.65:
        return "\n".join(f"{g.pick(['status', 'version', 'uptime', 'build', 'region', 'mode', 'workers', 'queue_depth'])}={g.pick(['ok', 'up', str(g.int(0, 9999)), 'eu-west-1', 'active'])}" for _ in range(g.int(2, 5)))
    if k < 0.82:
        fields = "".join(f"<{f}>{v}</{f}>" for f, v in ((g.pick(["OrderId", "CustomerId", "Id"]), any_id(g)), ("Status", g.pick(["Active", "Shipped", "Approved"])), (g.pick(["Total", "Amount"]), money(g))))
        return f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><{g.pick(["GetOrderResponse", "GetCustomerResult", "SubmitResponse"])}>{fields}</{g.pick(["GetOrderResponse", "GetCustomerResult", "SubmitResponse"])}></soap:Body></soap:Envelope>'
    items = "".join(f"<item><title>{g.pick(WORDS)}</title><link>https://example.com/{g.alnum(6).lower()}</link><pubDate>{ts(g)}</pubDate></item>" for _ in range(g.int(1, 3)))
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>{g.pick(["Status", "Blog", "Releases"])}</title>{items}</channel></rss>'


OK_MSG = ["Operación realizada con éxito", "Pedido creado correctamente", "Opération réussie", "Commande enregistrée", "Vorgang erfolgreich abgeschlossen", "Gespeichert", "処理が完了しました", "登録しました",
          "처리되었습니다", "저장되었습니다", "Операция выполнена успешно", "Заказ создан", "Operação concluída com sucesso", "Salvo com sucesso", "提交成功啦", "已经帮你保存好了", "搞定，已处理", "成功啦～"]
ACK_SUBJ = ["request", "message", "job", "event", "payment", "upload", "batch", "order", "webhook", "task", "export", "import", "subscription change", "delivery"]
ACK_PRED = ["accepted", "accepted for processing", "queued", "received", "created", "scheduled", "processed", "recorded", "registered", "submitted", "enqueued for delivery", "completed"]


def ok_plain_formats(g: Gen) -> str:
    """Success answers that are not JSON: YAML-like and INI-like key/value text, metrics exposition,
    TSV and NDJSON records, acknowledgements in a sentence."""
    k = g.r.random()
    keys = g.r.sample(["status", "state", "version", "region", "replicas", "ready", "uptime", "build", "count", "queue", "mode", "leader", "shards", "healthy", "last_sync", "owner", "env"], g.int(2, 6))
    vals = lambda: g.pick(["ok", "up", "true", "running", "active", "green", str(g.int(0, 9999)), g.pick(["eu-central-1", "us-west-2", "cn-north-1"]), g.date(), f"{g.int(1, 9)}.{g.int(0, 30)}.{g.int(0, 9)}"])  # noqa: E731
    if k < 0.25:
        return "\n".join(f"{key}: {vals()}" for key in keys)
    if k < 0.35:
        return f"[{g.pick(['service', 'status', 'server', 'main'])}]\n" + "\n".join(f"{key} = {vals()}" for key in keys)
    if k < 0.55:
        metric = g.pick(["queue_depth", "http_requests_total", "orders_processed", "cache_hits", "worker_busy", "disk_free_bytes", "jobs_pending"])
        lines = [f"# HELP {metric} {g.pick(['Current value', 'Total count', 'Items waiting', 'Gauge'])}", f"# TYPE {metric} {g.pick(['gauge', 'counter'])}"] if g.chance(0.7) else []
        lines += [f'{metric}{{{g.pick(["queue", "route", "instance", "job"])}="{g.pick(["orders", "refunds", "api", "worker-1", "/v1/items"])}"}} {g.int(0, 99999)}' for _ in range(g.int(1, 4))]
        return "\n".join(lines)
    if k < 0.65:
        cols = g.r.sample(["id", "name", "qty", "status", "updated", "city", "amount"], g.int(2, 4))
        return "\n".join(["\t".join(cols)] + ["\t".join(str(g.pick([any_id(g), g.pick(PEOPLE), g.int(0, 99), g.pick(["open", "paid"]), g.date()])) for _ in cols) for _ in range(g.int(1, 4))])
    if k < 0.78:
        return "\n".join(dumps(g, styled(g, {"id": any_id(g), **random_object(g, 1)})).replace("\n", " ") for _ in range(g.int(2, 4)))
    if g.chance(0.35):
        m = g.pick(OK_MSG)
        return m if g.chance(0.5) else dumps(g, {g.pick(["message", "msg", "mensaje", "status", "result"]): m, g.pick(["code", "status", "errcode"]): g.pick([0, 200, "OK", "0000"])} | ({"data": styled(g, random_object(g, 1))} if g.chance(0.5) else {}))
    s = f"{g.pick(ACK_SUBJ)} {g.pick(ACK_PRED)}"
    s = s[:1].upper() + s[1:] if g.chance(0.6) else s
    return s + g.pick(["", ".", f" (id {any_id(g)})", f": {any_id(g)}", ". Thank you.", " successfully"])


def ok_small_record(g: Gen) -> str:
    """A small flat record (2-5 fields), the commonest answer of a get-by-id or lookup endpoint."""
    style = key_style(g)
    fields = g.r.sample([("id", lambda: any_id(g)), ("email", lambda: f"{g.alnum(g.int(3, 9)).lower()}@{g.pick(['example.com', 'mail.example.org', 'corp.test', 'qq.com'])}"), ("name", lambda: g.pick(PEOPLE)),
                         ("status", lambda: g.pick(["active", "ok", "shipped", "gold", "pending", "enabled"])), ("tier", lambda: g.pick(["gold", "silver", "bronze", "free", "pro"])), ("count", lambda: g.int(0, 999)),
                         ("updated_at", lambda: ts(g)), ("amount", lambda: money(g)), ("country", lambda: g.pick(["DE", "US", "CN", "BR", "JP"])), ("phone", lambda: "+" + g.digits(g.int(9, 12)))], g.int(1, 4))
    rec = {style(g.pick(["id", "customer_id", "user_id", "order_id", "account_id", "uid", "key"])): any_id(g)}
    rec.update({style(k): f() for k, f in fields if k != "id"})
    return dumps(g, rec)


OK_REAL = [ok_small_record, ok_small_record, ok_plain_formats, ok_plain_formats, ok_payments, ok_code_host, ok_messaging, ok_messaging, ok_commerce, ok_crm, ok_aws, ok_gcp, ok_azure, ok_cn_platforms, ok_paginated, ok_paginated, ok_single, ok_single, ok_single, ok_graphql, ok_graphql, ok_text_formats]


# ------------------------------------------------------------------ errors: envelopes and languages

GQL_CODES = {
    "auth_failed": ["UNAUTHENTICATED", "FORBIDDEN", "UNAUTHORIZED", "ACCESS_DENIED", "INVALID_TOKEN"],
    "rate_limited": ["THROTTLED", "RATE_LIMITED", "TOO_MANY_REQUESTS", "MAX_COST_EXCEEDED", "RATE_LIMIT"],
    "not_found": ["NOT_FOUND", "RESOURCE_NOT_FOUND", "NOT_EXISTS"],
    "server_error": ["INTERNAL_SERVER_ERROR", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE", "UNEXPECTED"],
    "malformed": ["GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT", "BAD_REQUEST", "INVALID_ARGUMENT"],
    "data_corrupted": ["DATA_CORRUPTED", "CHECKSUM_MISMATCH", "INTEGRITY_ERROR"],
    "timeout": ["TIMEOUT", "DEADLINE_EXCEEDED", "QUERY_TIMEOUT"],
    "network_issue": ["UPSTREAM_UNREACHABLE", "BAD_GATEWAY", "CONNECTION_REFUSED", "SUBGRAPH_UNREACHABLE"],
    "unknown": ["CARD_DECLINED", "INSUFFICIENT_INVENTORY", "CONFLICT", "PAYMENT_REQUIRED", "BUSINESS_RULE"],
}

MSG = {
    "auth_failed": {
        "en": ["Invalid access token", "Access token has expired", "You must be logged in to do this", "Bad credentials", "Not authorized to access this field", "API key not valid for this project", "Signature verification failed", "Session expired, sign in again"],
        "ja": ["認証に失敗しました", "アクセストークンの有効期限が切れています", "ログインしてください", "APIキーが無効です", "権限がありません"],
        "ko": ["인증에 실패했습니다", "토큰이 만료되었습니다", "접근 권한이 없습니다", "다시 로그인해 주세요"],
        "es": ["Token de acceso inválido", "La sesión ha expirado, inicie sesión de nuevo", "Credenciales incorrectas", "No tiene permiso para realizar esta acción"],
        "pt": ["Token inválido ou expirado", "Acesso negado", "Credenciais inválidas", "Sessão expirada, faça login novamente"],
        "de": ["Ungültiges Zugriffstoken", "Sitzung abgelaufen, bitte erneut anmelden", "Zugriff verweigert", "API-Schlüssel ist ungültig"],
        "fr": ["Jeton d'accès invalide", "Session expirée, veuillez vous reconnecter", "Accès refusé", "Identifiants incorrects"],
        "ru": ["Неверный токен доступа", "Срок действия сессии истёк", "Доступ запрещён", "Неверный ключ API"],
        "zh": ["登录过期了，重新登一下吧", "没权限哦，找管理员开通一下", "token不对，检查一下", "身份验证没通过", "账号未登录或登录已失效", "你的登录状态失效啦"],
    },
    "rate_limited": {
        "en": ["Too many requests, slow down", "Throttled: query cost exceeds the available budget", "You have exceeded your request quota for today", "API rate limit exceeded for user", "Request was throttled. Expected available in 12 seconds."],
        "ja": ["リクエストが多すぎます", "しばらくしてから再度お試しください（レート制限）", "API呼び出し回数の上限に達しました"],
        "ko": ["요청이 너무 많습니다", "호출 한도를 초과했습니다", "잠시 후 다시 시도해 주세요"],
        "es": ["Demasiadas solicitudes, inténtelo más tarde", "Se ha superado el límite de peticiones", "Cuota diaria agotada"],
        "pt": ["Muitas requisições, tente novamente mais tarde", "Limite de requisições excedido", "Cota esgotada"],
        "de": ["Zu viele Anfragen, bitte später erneut versuchen", "Anfragelimit überschritten", "Kontingent aufgebraucht"],
        "fr": ["Trop de requêtes, réessayez plus tard", "Limite de débit dépassée", "Quota épuisé"],
        "ru": ["Слишком много запросов", "Превышен лимит запросов", "Квота исчерпана, попробуйте позже"],
        "zh": ["你点得太快了，歇一会儿再来吧", "操作太频繁啦，请稍后再试", "手速太快了，休息一下", "访问人数太多，请稍后刷新", "今天的调用次数用完了，明天再来", "服务器被挤爆了，请慢一点"],
    },
    "not_found": {
        "en": ["Could not resolve to a node with the global id", "No such object", "The requested resource does not exist", "Record not found", "Unknown order id"],
        "ja": ["リソースが見つかりません", "指定されたIDは存在しません", "ページが見つかりません"],
        "ko": ["리소스를 찾을 수 없습니다", "존재하지 않는 주문입니다"],
        "es": ["Recurso no encontrado", "El pedido no existe", "No se encontró el registro"],
        "pt": ["Recurso não encontrado", "Pedido não existe"],
        "de": ["Ressource nicht gefunden", "Bestellung existiert nicht"],
        "fr": ["Ressource introuvable", "La commande n'existe pas"],
        "ru": ["Ресурс не найден", "Заказ не существует"],
        "zh": ["没找到这个订单哦", "查无此人", "这个页面走丢了", "数据不存在，可能已被删除"],
    },
    "server_error": {
        "en": ["Internal server error", "Something went wrong on our end", "Unexpected error while resolving field", "The service is temporarily unavailable for maintenance", "Unhandled exception in resolver"],
        "ja": ["サーバー内部エラーが発生しました", "システムエラー", "メンテナンス中です"],
        "ko": ["서버 내부 오류가 발생했습니다", "시스템 점검 중입니다"],
        "es": ["Error interno del servidor", "Ocurrió un error inesperado"],
        "pt": ["Erro interno do servidor", "Ocorreu um erro inesperado"],
        "de": ["Interner Serverfehler", "Ein unerwarteter Fehler ist aufgetreten"],
        "fr": ["Erreur interne du serveur", "Une erreur inattendue s'est produite"],
        "ru": ["Внутренняя ошибка сервера", "Произошла непредвиденная ошибка"],
        "zh": ["服务器开小差了，稍后再试", "系统出了点问题，工程师正在抢修", "服务维护中，暂停使用", "后台挂了"],
    },
    "malformed": {
        "en": ["Syntax Error: Expected Name, found <EOF>", "Variable \"$id\" of required type \"ID!\" was not provided", "Cannot query field \"totl\" on type \"Order\"", "Invalid value for argument 'first'", "Request body must be valid JSON"],
        "ja": ["リクエストの形式が正しくありません", "必須パラメータがありません", "パラメータが不正です"],
        "ko": ["잘못된 요청 형식입니다", "필수 파라미터가 누락되었습니다"],
        "es": ["Parámetro inválido", "Falta un campo obligatorio", "El cuerpo de la solicitud no es JSON válido"],
        "pt": ["Parâmetro inválido", "Campo obrigatório ausente"],
        "de": ["Ungültiger Parameter", "Pflichtfeld fehlt", "Anfrage hat ein ungültiges Format"],
        "fr": ["Paramètre invalide", "Champ obligatoire manquant", "Format de requête invalide"],
        "ru": ["Неверный параметр", "Отсутствует обязательное поле"],
        "zh": ["参数不对，检查一下格式", "手机号格式不对", "缺少必填项", "传的JSON有问题"],
    },
    "data_corrupted": {
        "en": ["Checksum mismatch for chunk", "Stored object is corrupted", "Digest verification failed after download"],
        "ja": ["データが破損しています", "チェックサムが一致しません"],
        "ko": ["데이터가 손상되었습니다", "체크섬이 일치하지 않습니다"],
        "es": ["Los datos están dañados", "La suma de verificación no coincide"],
        "pt": ["Dados corrompidos", "Checksum não confere"],
        "de": ["Daten beschädigt", "Prüfsumme stimmt nicht überein"],
        "fr": ["Données corrompues", "La somme de contrôle ne correspond pas"],
        "ru": ["Данные повреждены", "Контрольная сумма не совпадает"],
        "zh": ["文件坏了，重新传一下", "数据对不上，校验没过", "内容乱码了"],
    },
    "timeout": {
        "en": ["Query timed out", "Resolver exceeded its deadline", "Request timed out waiting for the downstream service", "Operation timed out after 30000ms"],
        "ja": ["タイムアウトしました", "リクエストがタイムアウトしました"],
        "ko": ["요청 시간이 초과되었습니다"],
        "es": ["Tiempo de espera agotado", "La solicitud excedió el tiempo límite"],
        "pt": ["Tempo limite excedido", "A requisição expirou"],
        "de": ["Zeitüberschreitung der Anfrage", "Timeout beim Warten auf den Dienst"],
        "fr": ["Délai d'attente dépassé", "La requête a expiré"],
        "ru": ["Превышено время ожидания", "Тайм-аут запроса"],
        "zh": ["等太久了，超时了", "查询超时，数据量太大", "接口响应超时啦"],
    },
    "network_issue": {
        "en": ["Subgraph unreachable: connect ECONNREFUSED", "Bad gateway: upstream connection failed", "Could not resolve host", "Connection reset by peer while contacting upstream"],
        "ja": ["ゲートウェイエラー", "上流サーバーに接続できません", "接続が拒否されました"],
        "ko": ["게이트웨이 오류", "업스트림 서버에 연결할 수 없습니다"],
        "es": ["Error de puerta de enlace", "No se pudo conectar con el servidor de origen", "Conexión rechazada"],
        "pt": ["Erro de gateway", "Conexão recusada pelo servidor de origem"],
        "de": ["Gateway-Fehler", "Verbindung zum Upstream-Server fehlgeschlagen", "Verbindung abgelehnt"],
        "fr": ["Erreur de passerelle", "Impossible de joindre le serveur d'origine", "Connexion refusée"],
        "ru": ["Ошибка шлюза", "Не удалось подключиться к вышестоящему серверу", "Соединение отклонено"],
        "zh": ["网关出错了，上游连不上", "网络不通，连接被拒绝", "域名解析失败"],
    },
    "unknown": {
        "en": ["Not enough inventory to fulfil this order", "Card was declined", "Discount code is no longer active", "This username is already taken", "Customer has an outstanding balance"],
        "ja": ["在庫が不足しています", "カードが拒否されました", "クーポンの有効期限が切れています"],
        "ko": ["재고가 부족합니다", "카드 결제가 거절되었습니다"],
        "es": ["Saldo insuficiente", "La tarjeta fue rechazada", "El cupón ha caducado"],
        "pt": ["Saldo insuficiente", "Cartão recusado"],
        "de": ["Nicht genügend Guthaben", "Karte abgelehnt", "Gutschein abgelaufen"],
        "fr": ["Solde insuffisant", "Carte refusée", "Le code promo a expiré"],
        "ru": ["Недостаточно средств", "Карта отклонена"],
        "zh": ["余额不够了", "这个券已经用过了", "活动已经结束啦", "商品卖光了"],
    },
}

PROBLEM_TYPE = {"auth_failed": (401, "Unauthorized"), "rate_limited": (429, "Too Many Requests"), "not_found": (404, "Not Found"), "server_error": (500, "Internal Server Error"), "malformed": (400, "Bad Request"),
                "data_corrupted": (422, "Unprocessable Entity"), "timeout": (504, "Gateway Timeout"), "network_issue": (502, "Bad Gateway"), "unknown": (409, "Conflict")}


def message(g: Gen, label: str) -> str:
    table = MSG[label]
    lang = g.pick(["en", "en", "zh", "zh", "ja", "ko", "es", "pt", "de", "fr", "ru"])
    return g.pick(table.get(lang) or table["en"])


def graphql_error(g: Gen, label: str) -> str:
    err: dict = {"message": message(g, label)}
    if g.chance(0.5):
        err["locations"] = [{"line": g.int(1, 20), "column": g.int(1, 40)}]
    if g.chance(0.5):
        err["path"] = [g.pick(["order", "viewer", "customer", "products"])] + ([g.pick(["edges", "total", "items"])] if g.chance(0.5) else [])
    if g.chance(0.85):
        err["extensions"] = {"code": g.pick(GQL_CODES[label])} | ({"requestId": g.uuid()} if g.chance(0.3) else {})
    body: dict = {"errors": [err]}
    if g.chance(0.6):
        body["data"] = None if g.chance(0.7) else {g.pick(["order", "viewer"]): None}
    return dumps(g, body)


def problem_json(g: Gen, label: str) -> str:
    code, title = PROBLEM_TYPE[label]
    if label == "timeout":
        code, title = g.pick([(504, "Gateway Timeout"), (408, "Request Timeout")])
    if label == "server_error":
        code, title = g.pick([(500, "Internal Server Error"), (503, "Service Unavailable")])
    if label == "unknown":
        code, title = g.pick([(409, "Conflict"), (402, "Payment Required"), (422, "Unprocessable Entity")])
    body = {"type": g.pick(["about:blank", f"https://api.example.com/problems/{label.replace('_', '-')}", f"https://errors.acme.io/{code}"]), "title": title, "status": code, "detail": message(g, label)}
    if g.chance(0.5):
        body["instance"] = f"/v1/{g.pick(['orders', 'users', 'payments'])}/{any_id(g)}"
    if g.chance(0.3):
        body["traceId"] = g.hex(32)
    return dumps(g, body)


def multilingual(g: Gen, label: str) -> str:
    m = message(g, label)
    k = g.r.random()
    if k < 0.35:
        return m
    key = g.pick(["message", "msg", "error", "detail", "errmsg", "errorMessage", "description"])
    return dumps(g, {key: m} | ({g.pick(["code", "status", "errcode"]): g.pick([PROBLEM_TYPE[label][0], -1, 1, f"E{g.int(100, 999)}"])} if g.chance(0.6) else {}))


ZH_CASUAL_PRE = ["哎呀，", "亲，", "不好意思，", "抱歉，", "糟糕，", "提示：", "温馨提示：", "", ""]
ZH_CASUAL_SUF = ["哦", "啦", "～", "呢", "！", "。", "，请见谅", ""]
POLITE_PRE = {"es": ["Lo sentimos, ", "Error: ", "Atención: "], "pt": ["Desculpe, ", "Erro: "], "fr": ["Désolé, ", "Erreur : "], "de": ["Leider: ", "Fehler: ", "Hinweis: "],
              "ja": ["申し訳ありません。", "エラー："], "ko": ["죄송합니다. ", "오류: "], "ru": ["Извините, ", "Ошибка: "], "en": ["Sorry, ", "Oops! ", "Error: "]}


def casual(g: Gen, label: str) -> str:
    """A label's message in a chattier register: Chinese particles, or a polite lead-in in another language;
    non-English wording must not read as `unknown` only because `unknown` holds other languages' prose."""
    lang = g.pick(["zh", "zh", "zh", "es", "pt", "fr", "de", "ja", "ko", "ru", "en"])
    m = g.pick(MSG[label].get(lang) or MSG[label]["en"])
    if lang == "zh":
        return g.pick(ZH_CASUAL_PRE) + m.rstrip("。！") + g.pick(ZH_CASUAL_SUF)
    return g.pick(POLITE_PRE[lang]) + m[:1].lower() + m[1:] if g.chance(0.7) else m


def for_label(label: str) -> list[Callable[[Gen], str]]:
    """Envelope and language variety for one error label."""
    return [lambda g: graphql_error(g, label), lambda g: problem_json(g, label), lambda g: multilingual(g, label), lambda g: multilingual(g, label), lambda g: casual(g, label)]


# keep random_value importable for callers that mix fields
__all__ = ["OK_REAL", "for_label", "random_value"]
