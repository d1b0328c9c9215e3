"""Japanese, Spanish and German parts of the intent-router generator (issue 43), written for the
generator (not taken from the held-out set): per intent, whole asks and asks assembled from a lead-in
and a thing; context sentences; off-domain asks; writers' greetings and closings. Placeholders are
those of generate.py's `fill` plus `{prod}` and `{when}` in the ticket's language.

German compounds and Japanese (no spaces) need nothing special from the featurizer: its character
1–4-grams see `Rechnung` inside `Rechnungskopie` and `返金` inside `返金手続き`, and kana/kanji are
one token each (so word bigrams are character bigrams).
"""
from __future__ import annotations

LANGS = ("ja", "es", "de")

PROD = {
    "ja": ["プリンター", "ノートパソコン", "オフィスチェア", "加湿器", "電子レンジ", "スニーカー", "炊飯器", "モニター", "キーボード", "コピー用紙", "部品", "照明器具"],
    "es": ["la cafetera", "el portátil", "las sillas", "el monitor", "las zapatillas", "el microondas", "la lámpara", "el teclado", "el papel de impresora", "las piezas de repuesto", "la chaqueta", "el router"],
    "de": ["der Drucker", "das Notebook", "die Bürostühle", "der Monitor", "die Turnschuhe", "die Mikrowelle", "die Lampe", "die Tastatur", "das Druckerpapier", "die Ersatzteile", "die Jacke", "der Router"],
}
WHEN = {
    "ja": ["昨日", "先週", "先月", "月曜日に", "10日前に", "今朝", "11月3日に", "2週間前に"],
    "es": ["ayer", "la semana pasada", "el lunes", "hace diez días", "el mes pasado", "esta mañana", "el 3 de noviembre", "hace dos semanas"],
    "de": ["gestern", "letzte Woche", "am Montag", "vor zehn Tagen", "letzten Monat", "heute Morgen", "am 3. November", "vor zwei Wochen"],
}

ASK = {
    "ja": {
        "order_status": ["注文{oid}はいつ届きますか", "{prod}がまだ届きません", "注文した商品の配送状況を確認したいです", "{when}注文したのにまだ発送されていません", "荷物の追跡番号を教えてください",
                         "注文{oid}の発送予定日を教えてください", "配達完了になっていますが受け取っていません。注文{oid}", "納期はいつになりますか、発注番号{oid}", "商品はいつ届く予定でしょうか",
                         "配送が遅れている理由を教えてください", "荷物が{n}日間動いていません", "どこの運送会社で発送しましたか", "発送状況はどうなっていますか", "入荷待ちの商品はいつ出荷されますか",
                         "届け先に荷物が来ていません、確認してもらえますか", "注文の処理中のまま進みません", "お届け予定日を過ぎても届きません"],
        "refund_request": ["注文{oid}を返金してください", "{prod}が壊れていたので返金をお願いします", "二重に請求されたので一件分を返金してください", "返品した商品の返金はいつになりますか",
                           "キャンセルした注文の代金を返してください", "返金処理をお願いします", "届いた商品が違うので返金を希望します", "返金がまだ反映されていません", "{amount}を返金してください",
                           "不良品なのでお金を返してください", "返金の手続き方法を教えてください", "送料を返金していただけますか", "カードへの返金をお願いします", "全額返金を希望します",
                           "請求額が多すぎるので差額を返金してください"],
        "invoice_copy": ["請求書{inv}を再発行してください", "請求書の写しを送ってください", "注文{oid}の請求書をメールで送ってください", "領収書を再発行してもらえますか", "請求書のPDFが欲しいです",
                         "先月分の請求書が届いていません", "請求書の宛名を修正して再送してください", "{email}に請求書を送ってください", "適格請求書を発行してください", "請求書をなくしたので再送をお願いします",
                         "経理用に請求書の控えが必要です", "請求書はどこからダウンロードできますか", "請求明細を送ってください", "納品書と請求書を再送してください"],
        "account_access": ["ログインできません", "パスワードを忘れました", "パスワードをリセットしたいです", "アカウントがロックされています", "認証コードが届きません", "二段階認証ができません",
                           "サインインすると毎回エラーになります", "アカウントが停止されてしまいました", "ユーザー{user}のロックを解除してください", "パスワード再設定のメールが来ません", "ログイン画面に戻されてしまいます",
                           "{email}でログインできません", "ワンタイムパスワードが無効と表示されます", "アカウントにアクセスできません", "IDとパスワードが正しいのに入れません"],
        "outage_report": ["APIが落ちていますか", "{service}が{code}エラーを返しています", "サービスが停止しているようです", "サイトにアクセスできません", "システム障害が発生していますか",
                          "全てのリクエストがタイムアウトします", "{service}が動いていません", "サーバーが応答しません", "管理画面が開きません、障害ですか", "{n}分前から{service}が使えません",
                          "本番環境で{code}エラーが多発しています", "決済が全部失敗しています", "アプリが全く繋がりません", "Webhookが届かなくなりました", "障害情報はありますか",
                          "画面を開くと502 Bad Gatewayになります", "504 Gateway Timeoutが出て誰も使えません", "社内の全員がシステムにアクセスできません", "カード決済ができず、お客様が支払えません"],
        "expense_claim_status": ["経費精算{claim}の状況を教えてください", "経費精算はいつ振り込まれますか", "出張費の精算が承認されていません", "立替金はいつ戻ってきますか", "交通費精算の進捗を確認したいです",
                                 "経費申請{claim}が差し戻された理由を教えてください", "精算申請が保留のままです", "出張旅費の支払いはいつですか", "{amount}の経費がまだ精算されていません", "経費精算が承認待ちのまま止まっています",
                                 "上長の承認後の精算はいつになりますか", "経費精算が給与に含まれていませんでした", "宿泊費の精算状況はどうなっていますか"],
    },
    "es": {
        "order_status": ["¿dónde está mi pedido {oid}?", "mi pedido todavía no ha llegado", "¿cuándo llega {prod}?", "hice el pedido {when} y no lo he recibido", "¿me podéis dar el número de seguimiento?",
                         "el seguimiento no se mueve desde hace {n} días", "¿ya se ha enviado el pedido {oid}?", "pone entregado pero no he recibido nada, pedido {oid}", "¿qué transportista lleva mi paquete?",
                         "necesito la fecha de entrega del pedido {oid}", "mi paquete va con retraso", "¿en qué estado está mi pedido?", "¿por qué no ha salido todavía mi pedido?", "el envío está atascado en aduanas",
                         "quiero saber cuándo me entregan {prod}", "el repartidor no ha venido", "¿podéis localizar mi envío {oid}?"],
        "refund_request": ["quiero un reembolso del pedido {oid}", "{prod} llegó roto, devolvedme el dinero", "me habéis cobrado dos veces, quiero que me devolváis un cargo", "¿cuándo me devolvéis el dinero de la devolución?",
                           "cancelé el pedido {oid} y quiero mi dinero", "solicito el reembolso de {amount}", "el producto es defectuoso, quiero la devolución del importe", "todavía no he recibido el reembolso",
                           "devolvedme los gastos de envío", "quiero devolver el pedido y recuperar mi dinero", "por favor, reembolsad el cargo en mi tarjeta", "me cobrasteis de más, quiero la diferencia",
                           "no quiero un vale, quiero el reembolso", "reembolso completo del pedido {oid}, por favor", "exijo que me devuelvan el dinero"],
        "invoice_copy": ["¿me podéis mandar la factura {inv}?", "necesito una copia de la factura del pedido {oid}", "reenviad la factura a {email}", "no encuentro mi factura, ¿me la enviáis otra vez?",
                         "necesito la factura con los datos de mi empresa", "¿dónde descargo mis facturas?", "la factura del mes pasado no me ha llegado", "emitid de nuevo la factura con el CIF correcto",
                         "necesito un duplicado de la factura {inv}", "enviadme la factura en PDF", "quiero el justificante de pago del pedido {oid}", "necesito las facturas del trimestre para contabilidad",
                         "la factura tiene mal la dirección, enviad una nueva", "¿podéis hacerme una factura rectificativa?"],
        "account_access": ["no puedo iniciar sesión", "he olvidado mi contraseña", "quiero restablecer la contraseña", "mi cuenta está bloqueada", "no me llega el código de verificación",
                           "no puedo entrar en mi cuenta", "el correo para cambiar la contraseña no llega a {email}", "me dice que el usuario no existe", "desbloquead el usuario {user}, por favor",
                           "la autenticación en dos pasos no funciona", "perdí el móvil con la app de autenticación y no puedo acceder", "mi cuenta está desactivada", "el enlace de acceso ha caducado",
                           "me sale contraseña incorrecta todo el rato", "no consigo acceder al portal"],
        "outage_report": ["¿está caída la API?", "{service} devuelve error {code}", "el servicio no funciona", "la web no carga para nadie", "¿hay una incidencia en vuestros servidores?",
                          "todas las peticiones dan timeout", "{service} está caído desde hace {n} minutos", "los pagos fallan todos", "la plataforma no responde", "error {code} en producción desde esta mañana",
                          "la aplicación no conecta con el servidor", "los webhooks han dejado de llegar", "el panel de control no abre", "¿tenéis una caída general?", "vuestro sistema está fuera de servicio",
                          "al abrir la web sale 502 Bad Gateway", "da 504 Gateway Timeout y nadie puede trabajar", "ningún compañero puede acceder al sistema", "el cobro con tarjeta no va y los clientes no pueden pagar"],
        "expense_claim_status": ["¿en qué estado está mi nota de gastos {claim}?", "¿cuándo me pagan los gastos del viaje?", "mi liquidación de gastos sigue pendiente", "¿ya aprobaron mi solicitud de gastos {claim}?",
                                 "me rechazaron la nota de gastos, ¿por qué?", "los gastos de kilometraje no me los han abonado", "¿cuándo me reembolsan los gastos de {amount}?", "la hoja de gastos lleva {n} días sin aprobar",
                                 "¿quién tiene que aprobar mi nota de gastos?", "las dietas del viaje no aparecen en la nómina", "quiero saber cómo va mi reembolso de gastos", "¿cuándo me devuelven lo que adelanté en el viaje?",
                                 "mi solicitud de gastos de viaje está parada"],
    },
    "de": {
        "order_status": ["wo ist meine Bestellung {oid}?", "meine Bestellung ist noch nicht angekommen", "wann kommt {prod}?", "ich habe {when} bestellt und noch nichts erhalten", "können Sie mir die Sendungsnummer schicken?",
                         "die Sendungsverfolgung hat sich seit {n} Tagen nicht bewegt", "wurde die Bestellung {oid} schon versandt?", "laut Status zugestellt, aber nichts angekommen, Bestellung {oid}", "welcher Paketdienst hat mein Paket?",
                         "ich brauche den Liefertermin für Auftrag {oid}", "meine Lieferung verspätet sich", "wie ist der Status meiner Bestellung?", "warum wurde meine Bestellung noch nicht verschickt?", "die Sendung hängt im Zoll fest",
                         "wann wird {prod} geliefert?", "der Zusteller ist nicht gekommen", "können Sie meine Sendung {oid} nachverfolgen?", "Lieferstatus bitte"],
        "refund_request": ["ich möchte eine Rückerstattung für Bestellung {oid}", "{prod} kam kaputt an, ich will mein Geld zurück", "Sie haben doppelt abgebucht, bitte eine Zahlung zurückerstatten", "wann bekomme ich das Geld für die Retoure?",
                           "ich habe Bestellung {oid} storniert und möchte mein Geld", "ich bitte um Erstattung von {amount}", "der Artikel ist defekt, bitte den Kaufpreis erstatten", "die Rückerstattung ist noch nicht eingegangen",
                           "bitte erstatten Sie die Versandkosten", "ich will die Bestellung zurückgeben und das Geld zurück", "bitte die Zahlung auf meine Kreditkarte zurückbuchen", "Sie haben zu viel berechnet, bitte die Differenz erstatten",
                           "keinen Gutschein, ich möchte mein Geld zurück", "volle Erstattung für Bestellung {oid} bitte", "Geld zurück bitte"],
        "invoice_copy": ["können Sie mir die Rechnung {inv} schicken?", "ich brauche eine Kopie der Rechnung zu Bestellung {oid}", "bitte die Rechnung an {email} senden", "ich finde meine Rechnung nicht, bitte noch mal schicken",
                         "ich brauche die Rechnung auf meine Firma ausgestellt", "wo kann ich meine Rechnungen herunterladen?", "die Rechnung vom letzten Monat ist nicht angekommen", "bitte die Rechnung mit korrekter USt-IdNr. neu ausstellen",
                         "ich brauche ein Duplikat der Rechnung {inv}", "schicken Sie mir die Rechnung als PDF", "ich brauche einen Zahlungsbeleg für Bestellung {oid}", "wir brauchen die Rechnungen des Quartals für die Buchhaltung",
                         "die Anschrift auf der Rechnung ist falsch, bitte neue Rechnung", "Rechnungskopie bitte", "können Sie eine Rechnungskorrektur ausstellen?"],
        "account_access": ["ich kann mich nicht anmelden", "ich habe mein Passwort vergessen", "ich möchte mein Passwort zurücksetzen", "mein Konto ist gesperrt", "der Bestätigungscode kommt nicht an",
                           "ich komme nicht in mein Konto", "die Mail zum Zurücksetzen des Passworts kommt nicht an {email}", "es heißt, der Benutzer existiert nicht", "bitte den Benutzer {user} entsperren",
                           "die Zwei-Faktor-Authentifizierung funktioniert nicht", "Handy mit der Authenticator-App verloren, kein Zugang mehr", "mein Zugang wurde deaktiviert", "der Anmeldelink ist abgelaufen",
                           "es kommt immer Passwort falsch", "Login funktioniert nicht", "ich kann mich nicht einloggen"],
        "outage_report": ["ist die API down?", "{service} liefert Fehler {code}", "der Dienst funktioniert nicht", "die Webseite lädt für niemanden", "gibt es eine Störung bei Ihren Servern?",
                          "alle Anfragen laufen in ein Timeout", "{service} ist seit {n} Minuten ausgefallen", "alle Zahlungen schlagen fehl", "die Plattform reagiert nicht", "seit heute Morgen Fehler {code} in Produktion",
                          "die App verbindet sich nicht mit dem Server", "es kommen keine Webhooks mehr an", "das Dashboard öffnet sich nicht", "haben Sie einen Ausfall?", "Ihr System ist nicht erreichbar", "Serverausfall?",
                          "beim Öffnen kommt 502 Bad Gateway", "504 Gateway Timeout, niemand kann arbeiten", "keiner der Kollegen kommt ins System", "Kartenzahlung geht nicht, Kunden können nicht zahlen"],
        "expense_claim_status": ["wie ist der Stand meiner Spesenabrechnung {claim}?", "wann bekomme ich die Reisekosten erstattet?", "meine Reisekostenabrechnung ist noch offen", "wurde mein Spesenantrag {claim} schon genehmigt?",
                                 "meine Spesenabrechnung wurde abgelehnt, warum?", "das Kilometergeld wurde noch nicht ausgezahlt", "wann wird die Auslagenerstattung von {amount} überwiesen?", "die Reisekostenabrechnung liegt seit {n} Tagen zur Freigabe",
                                 "wer muss meine Spesen freigeben?", "die Verpflegungspauschale fehlt auf der Gehaltsabrechnung", "wie weit ist meine Auslagenerstattung?", "wann bekomme ich meine ausgelegten Reisekosten zurück?",
                                 "mein Reisekostenantrag steckt fest"],
    },
}

# Asks assembled from a lead-in and a thing (ja: thing + lead, no space).
PARTS = {
    "ja": {
        "order_status": (["の配送状況を教えてください", "はいつ届きますか", "がまだ届きません", "の発送はいつですか", "の追跡ができません", "が遅れています"], ["注文", "荷物", "商品", "発注した部品", "購入品", "お届け物", "注文品"]),
        "refund_request": (["を返金してください", "の返金はまだですか", "の代金を返してほしいです", "の返金手続きをお願いします", "の返金を希望します"], ["注文", "返品した商品", "二重請求分", "キャンセル分", "送料", "不良品", "差額"]),
        "invoice_copy": (["を再発行してください", "を送ってください", "が届いていません", "の写しが必要です", "をダウンロードできません", "を再送してください"], ["請求書", "領収書", "請求書のPDF", "先月の請求書", "適格請求書", "請求明細"]),
        "account_access": (["できません", "がうまくいきません", "がエラーになります", "が届きません", "ができなくなりました"], ["ログイン", "サインイン", "パスワードの再設定", "認証コード", "二段階認証", "アカウントへのアクセス"]),
        "outage_report": (["が落ちています", "がダウンしています", "に繋がりません", "でエラーが多発しています", "が応答しません", "が停止しています"], ["API", "サーバー", "サービス", "サイト", "決済システム", "管理画面", "アプリ"]),
        "expense_claim_status": (["の状況を教えてください", "はいつ振り込まれますか", "が承認されていません", "が止まっています", "の進捗はどうですか"], ["経費精算", "出張費の精算", "立替金", "交通費の精算", "経費申請", "旅費精算"]),
    },
    "es": {
        "order_status": (["¿dónde está", "¿cuándo llega", "sigo esperando", "no ha llegado", "¿me podéis localizar", "¿qué pasa con"], ["mi pedido", "el paquete", "el envío", "mi compra", "la mercancía", "nuestro pedido"]),
        "refund_request": (["quiero el reembolso de", "devolvedme el dinero de", "reembolsad", "solicito la devolución del importe de", "¿cuándo me devolvéis"], ["mi pedido", "la compra", "el cargo duplicado", "el producto defectuoso", "el pedido cancelado", "los gastos de envío"]),
        "invoice_copy": (["enviadme", "necesito una copia de", "reenviad", "no encuentro", "¿me podéis mandar", "emitid de nuevo"], ["la factura", "mi factura", "el recibo", "la factura en PDF", "las facturas del mes", "la factura rectificativa"]),
        "account_access": (["no puedo", "no consigo", "me es imposible", "ayuda para"], ["iniciar sesión", "entrar en mi cuenta", "restablecer la contraseña", "recibir el código", "desbloquear mi cuenta", "acceder al portal"]),
        "outage_report": (["está caído", "no responde", "da error 500", "no funciona para nadie", "falla en producción"], ["el servicio", "la API", "el servidor", "la web", "el sistema de pagos", "la plataforma"]),
        "expense_claim_status": (["¿cómo va", "¿cuándo me pagan", "sigue pendiente", "¿está aprobada", "¿quién tiene"], ["mi nota de gastos", "la liquidación de gastos", "el reembolso de gastos", "los gastos del viaje", "mi solicitud de dietas", "el kilometraje"]),
    },
    "de": {
        "order_status": (["wo bleibt", "wann kommt", "ich warte noch auf", "nicht angekommen:", "bitte verfolgen Sie", "was ist mit"], ["meine Bestellung", "das Paket", "die Lieferung", "die Sendung", "unser Auftrag", "die Ware"]),
        "refund_request": (["bitte erstatten Sie", "ich will mein Geld zurück für", "Rückerstattung für", "bitte zurückbuchen:", "wann erstatten Sie"], ["meine Bestellung", "den Einkauf", "die doppelte Abbuchung", "den defekten Artikel", "die stornierte Bestellung", "die Versandkosten"]),
        "invoice_copy": (["bitte senden Sie", "ich brauche eine Kopie", "bitte erneut schicken:", "ich finde nicht:", "können Sie mir schicken:", "bitte neu ausstellen:"], ["die Rechnung", "meine Rechnung", "den Beleg", "die Rechnung als PDF", "die Monatsrechnungen", "die korrigierte Rechnung"]),
        "account_access": (["ich kann nicht", "es klappt nicht:", "keine Möglichkeit zum", "Hilfe beim"], ["anmelden", "einloggen", "Passwort zurücksetzen", "Zugriff auf mein Konto", "Konto entsperren", "Portal-Login"]),
        "outage_report": (["ist ausgefallen:", "reagiert nicht:", "liefert 500er:", "ist down:", "Störung bei"], ["der Dienst", "die API", "der Server", "die Webseite", "das Zahlungssystem", "die Plattform"]),
        "expense_claim_status": (["wie steht es um", "wann wird ausgezahlt:", "noch offen:", "ist genehmigt?", "wer bearbeitet"], ["meine Spesenabrechnung", "die Reisekostenabrechnung", "die Auslagenerstattung", "meine Reisekosten", "den Spesenantrag", "das Kilometergeld"]),
    },
}

CTX = {
    "ja": ["急ぎで必要です。", "何度か問い合わせています。", "社内の締め日が近いです。", "チャットでは解決しませんでした。", "お客様から問い合わせが来ています。"],
    "es": ["Es urgente.", "Ya he escrito dos veces.", "Lo necesitamos para el cierre de mes.", "El chat no me ha ayudado.", "Tengo un cliente esperando."],
    "de": ["Es ist dringend.", "Ich schreibe schon zum zweiten Mal.", "Wir brauchen es für den Monatsabschluss.", "Der Chat konnte nicht helfen.", "Ein Kunde wartet darauf."],
}
GREET = {
    "ja": ["お世話になっております。", "お疲れさまです。", "こんにちは。", "いつもお世話になっております。", "カスタマーサポート御中", "すみません、", ""],
    "es": ["Hola,", "Buenos días,", "Buenas tardes:", "Estimados señores:", "Hola equipo,", "Hola, ¿qué tal?", ""],
    "de": ["Hallo,", "Guten Tag,", "Sehr geehrte Damen und Herren,", "Moin,", "Hallo Support-Team,", "Liebes Team,", ""],
}
CLOSE = {
    "ja": ["よろしくお願いいたします。", "よろしくお願いします。", "至急ご対応ください。", "ご確認ください。", "ありがとうございます。", ""],
    "es": ["Gracias.", "Un saludo.", "Saludos cordiales,", "Quedo a la espera.", "Gracias de antemano.", "Atentamente,", ""],
    "de": ["Danke.", "Viele Grüße", "Mit freundlichen Grüßen", "Beste Grüße", "Vielen Dank im Voraus.", "Gruß", ""],
}
NAMES = {
    "ja": ["佐々木 美穂", "高橋 健", "伊藤 直子", "渡辺 翔", "小川 恵", "松本 亮"],
    "es": ["Lucía Fernández", "Diego Navarro", "Ana Torres", "Miguel Romero", "Sofía Castro", "Andrés Molina"],
    "de": ["Anna Hoffmann", "Lukas Wagner", "Sabine Richter", "Felix Braun", "Monika Keller", "Jan Neumann"],
}
ORGS = {
    "ja": ["株式会社ヒカリ商事 購買部", "東和テクノ株式会社 経理課", "有限会社さくら物産", "株式会社ミライ 情報システム部"],
    "es": ["Suministros del Norte S.L. | Compras", "Grupo Mediterráneo | Administración", "Talleres Ruiz S.A.", "Logística Atlántica | Operaciones"],
    "de": ["Berger Maschinenbau GmbH | Einkauf", "Stadtwerke Musterstadt | Buchhaltung", "Kaiser & Partner KG", "Weber Logistik AG | IT"],
}
LEGAL = {
    "ja": ["本メールは機密情報を含む場合があります。誤って受信された場合は削除してください。", "このメールは送信専用です。", "※本メールにお心当たりのない方は破棄願います。"],
    "es": ["Este correo y sus adjuntos son confidenciales. Si lo ha recibido por error, bórrelo.", "Antes de imprimir este correo, piense en el medio ambiente.", "Protección de datos: sus datos se tratan conforme al RGPD."],
    "de": ["Diese E-Mail kann vertrauliche Informationen enthalten. Falls Sie nicht der Empfänger sind, löschen Sie sie bitte.", "Sitz der Gesellschaft: Frankfurt am Main, Registergericht HRB 55555, Geschäftsführung: K. Albers", "Bitte denken Sie an die Umwelt, bevor Sie diese E-Mail ausdrucken."],
}

# Off-domain asks in each language (`unknown`).
UNKNOWN = {
    "ja": ["明日は雨が降りますか", "近くに美味しい寿司屋はありますか", "おすすめの本を教えてください", "コピー機が紙詰まりしています", "会議室を予約したいです", "Wi-Fiのパスワードを教えてください",
           "来月の忘年会の場所はどこですか", "健康診断の予約を変更したいです", "飛行機の座席を変更できますか", "ホテルの予約をキャンセルしたい", "携帯の料金プランを変えたいです", "銀行口座を開設したいです",
           "JavaScriptで配列をソートするには", "面接の日程を調整したいです", "履歴書を送ります", "弊社のサービスをご紹介させてください", "今なら50%オフ！クリックして登録", "ありがとうございました", "こんにちは",
           "テスト", "ノートパソコンが重いです", "VPNの設定方法を教えて", "引っ越し業者を紹介してください", "子供の塾の申し込みをしたい", "車の保険の見積もりが欲しい", "駐車場の契約を更新したい",
           "冗談を言って", "今日は何曜日ですか", "年末年始の営業時間を知りたい", "新しいキーボードを注文してほしい",
           "会議室のモニターが映りません", "社内のプリンターに接続できません", "Teamsの画面共有ができません", "Excelのマクロがエラーになります", "内線電話が鳴りません", "社内Wi-Fiが遅いです"],
    "es": ["¿va a llover mañana?", "¿conocéis un buen restaurante cerca?", "recomiéndame un libro", "la fotocopiadora no funciona", "quiero reservar la sala de reuniones", "¿cuál es la contraseña del wifi?",
           "¿dónde es la cena de Navidad?", "quiero cambiar la cita del médico", "¿puedo cambiar el asiento del vuelo?", "quiero cancelar la reserva del hotel", "quiero cambiar mi tarifa de móvil", "quiero abrir una cuenta en el banco",
           "¿cómo ordeno un array en JavaScript?", "quiero cambiar la fecha de la entrevista", "os envío mi currículum", "le presentamos nuestra empresa de software", "¡50% de descuento solo hoy! haz clic aquí", "muchas gracias", "hola",
           "prueba", "mi portátil va muy lento", "¿cómo configuro la VPN?", "¿me recomendáis una empresa de mudanzas?", "quiero apuntar a mi hijo a clases de inglés", "quiero un presupuesto del seguro del coche", "quiero renovar la plaza de garaje",
           "cuéntame un chiste", "¿qué día es hoy?", "¿qué horario tenéis en Navidad?", "necesito un teclado nuevo para mi puesto",
           "el proyector de la sala no da imagen", "no puedo conectar con la impresora de la oficina", "Teams se cierra al compartir pantalla", "la macro de Excel da error", "el teléfono fijo de mi mesa no suena", "el wifi de la oficina va lento"],
    "de": ["regnet es morgen?", "kennt ihr ein gutes Restaurant in der Nähe?", "empfiehl mir ein Buch", "der Kopierer geht nicht", "ich möchte den Besprechungsraum reservieren", "wie ist das WLAN-Passwort?",
           "wo findet die Weihnachtsfeier statt?", "ich möchte meinen Arzttermin verschieben", "kann ich meinen Sitzplatz im Flug ändern?", "ich möchte die Hotelbuchung stornieren", "ich möchte meinen Handytarif wechseln", "ich möchte ein Bankkonto eröffnen",
           "wie sortiere ich ein Array in JavaScript?", "ich möchte den Termin für das Vorstellungsgespräch verschieben", "anbei mein Lebenslauf", "wir möchten Ihnen unsere Softwarefirma vorstellen", "Nur heute 50 % Rabatt! Jetzt klicken", "vielen Dank", "hallo",
           "Test", "mein Laptop ist sehr langsam", "wie richte ich das VPN ein?", "könnt ihr eine Umzugsfirma empfehlen?", "ich möchte mein Kind für den Englischkurs anmelden", "ich hätte gern ein Angebot für die Kfz-Versicherung", "ich möchte den Stellplatz verlängern",
           "erzähl mir einen Witz", "welcher Tag ist heute?", "wie sind eure Öffnungszeiten an Weihnachten?", "ich brauche eine neue Tastatur für meinen Arbeitsplatz",
           "der Beamer im Besprechungsraum zeigt kein Bild", "ich kann den Bürodrucker nicht verbinden", "Teams stürzt beim Bildschirmteilen ab", "das Excel-Makro bringt einen Fehler", "mein Tischtelefon klingelt nicht", "das Büro-WLAN ist langsam"],
}
UNK_SUBJ = {
    "ja": ["エアコン", "社員証", "駐輪場", "ヨガ教室", "歯医者の予約", "電車の定期券", "年末調整", "社用車", "会議室のモニター", "航空券", "ジムの会員", "住民票"],
    "es": ["el aire acondicionado", "mi tarjeta de empleado", "el gimnasio", "la clase de yoga", "la cita del dentista", "el abono de transporte", "la declaración de la renta", "el coche de empresa", "la pantalla de la sala", "el billete de tren", "mi seguro médico", "el empadronamiento"],
    "de": ["die Klimaanlage", "mein Mitarbeiterausweis", "das Fitnessstudio", "der Yogakurs", "der Zahnarzttermin", "die Monatskarte", "die Steuererklärung", "der Dienstwagen", "der Bildschirm im Besprechungsraum", "das Bahnticket", "meine Krankenversicherung", "die Ummeldung"],
}
UNK_PRED = {
    "ja": ["が壊れています", "について聞きたいです", "はどうすればいいですか", "の予約を変更したい", "はいくらですか", "の担当者は誰ですか"],
    "es": ["no funciona", "¿a quién pregunto?", "¿cómo se hace?", "quiero cambiar la cita", "¿cuánto cuesta?", "¿quién se encarga?"],
    "de": ["ist kaputt", "wen frage ich dazu?", "wie geht das?", "ich möchte den Termin ändern", "was kostet das?", "wer ist zuständig?"],
}

# Issue 43, second look: feedback without an ask, and other industries' asks that share this desk's
# words (a lost bank card, number porting, a meter reading, a parcel-fee scam), in every language.
FEEDBACK = {
    "en": ["your new website looks great, well done", "the new app design is lovely", "checkout is much faster now, thanks", "delivery was quick, thank you", "great service as always",
           "the support chat was really helpful today", "I love the dark mode in the app", "just a compliment for your warehouse team"],
    "zh": ["新版网站很好看，赞一个", "App新设计很棒", "这次发货很快，谢谢", "客服态度很好，表扬一下", "结账比以前快多了"],
    "ja": ["新しいサイトのデザインが素敵です", "今回の配送はとても早かったです。ありがとうございます", "サポートの方がとても親切でした", "アプリが使いやすくなりました"],
    "es": ["la nueva web está genial, enhorabuena", "el envío fue rapidísimo, gracias", "la atención del chat fue excelente", "la app nueva es muy cómoda"],
    "de": ["die neue Webseite sieht super aus, Kompliment", "die Lieferung war sehr schnell, danke", "der Support im Chat war klasse", "die neue App ist viel übersichtlicher"],
}
OTHER_INDUSTRY = {
    "en": ["I lost my credit card on holiday, please block it", "I want to port my number to another carrier", "what is my PAC code", "the meter reader could not get in, please send someone again",
           "my debit card was stolen, freeze it", "switch my electricity tariff to green energy", "my roaming bill is too high", "please cancel my home insurance",
           "Your parcel is held at customs, pay the 2.99 fee here: http://bit.ly/abc", "DHL: delivery failed, reschedule and pay 1.50 at http://dhl-parcel.info", "your bank account is locked, verify here http://secure-bank.example.net"],
    "zh": ["信用卡丢了，请帮我挂失", "我想携号转网", "抄表员没进得了门，请再派人来", "银行卡被盗刷了，请冻结", "电费套餐怎么换", "您的包裹因地址不详被扣留，请点击链接支付2元补运费"],
    "ja": ["クレジットカードをなくしたので止めてください", "携帯の番号をそのまま他社に移したい", "電気のメーター検針の日程を変えたい", "銀行のキャッシュカードが盗まれました", "【宅配便】お荷物を持ち帰りました。再配達料金のお支払いはこちら http://bit.ly/xyz"],
    "es": ["he perdido la tarjeta de crédito, bloqueadla", "quiero hacer la portabilidad de mi número", "el lector del contador no pudo entrar", "me han robado la tarjeta del banco", "Correos: su paquete está retenido, pague 1,99 € aquí http://bit.ly/abc"],
    "de": ["ich habe meine Kreditkarte verloren, bitte sperren", "ich möchte meine Rufnummer zu einem anderen Anbieter mitnehmen", "der Zählerableser kam nicht in den Keller", "meine Bankkarte wurde gestohlen", "DHL: Ihr Paket liegt beim Zoll, zahlen Sie 1,99 € hier http://bit.ly/abc"],
}
