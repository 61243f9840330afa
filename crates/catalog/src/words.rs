//! The words people read for what the catalog declares, in each language brandhub speaks:
//! what a resource's records are called, the title of each field, and the word of each code a
//! field's domain allows (a status, a file type, a user type). The OpenAPI description carries
//! them, so that clients (the portal among them) show words, never field names or codes. The
//! catalog refuses to load when a field a client sees or a code lacks its words; every
//! resource has its names by construction.

use crate::Res;

/// A text in each language: English and German.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// The English text.
    pub en: &'static str,
    /// The German text.
    pub de: &'static str,
}

/// What a resource's records are called: one record and several, in each language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// One record ("Brand store").
    pub one: Words,
    /// Several records ("Brand stores").
    pub many: Words,
}

const fn w(en: &'static str, de: &'static str) -> Words {
    Words { en, de }
}

const fn n(one: Words, many: Words) -> Names {
    Names { one, many }
}

/// What the records of a resource are called (every resource is: the match is over all
/// handles).
pub fn resource_names(resource: Res) -> Names {
    match resource {
        Res::Company => n(w("Company", "Firma"), w("Companies", "Firmen")),
        Res::Brand => n(w("Brand", "Marke"), w("Brands", "Marken")),
        Res::Warehouse => n(w("Warehouse", "Lager"), w("Warehouses", "Lager")),
        Res::Host => n(w("Host", "Händler"), w("Hosts", "Händler")),
        Res::Store => n(w("Store", "Shop"), w("Stores", "Shops")),
        Res::BrandStore => n(
            w("Brand store", "Markenshop"),
            w("Brand stores", "Markenshops"),
        ),
        Res::Product => n(w("Product", "Produkt"), w("Products", "Produkte")),
        Res::Variant => n(w("Variant", "Variante"), w("Variants", "Varianten")),
        Res::Stock => n(w("Stock", "Bestand"), w("Stock", "Bestände")),
        Res::Order => n(w("Order", "Bestellung"), w("Orders", "Bestellungen")),
        Res::OrderItem => n(
            w("Order line", "Bestellposition"),
            w("Order lines", "Bestellpositionen"),
        ),
        Res::User => n(w("User", "Benutzer"), w("Users", "Benutzer")),
        Res::File => n(w("File", "Datei"), w("Files", "Dateien")),
        Res::Price => n(w("Price", "Preis"), w("Prices", "Preise")),
        Res::Image => n(w("Image", "Bild"), w("Images", "Bilder")),
        Res::ApiKey => n(
            w("API key", "API-Schlüssel"),
            w("API keys", "API-Schlüssel"),
        ),
        Res::Webhook => n(w("Webhook", "Webhook"), w("Webhooks", "Webhooks")),
        Res::WebhookDelivery => n(
            w("Webhook delivery", "Webhook-Zustellung"),
            w("Webhook deliveries", "Webhook-Zustellungen"),
        ),
        Res::EventProblem => n(
            w("Event set aside", "Zurückgestelltes Ereignis"),
            w("Events set aside", "Zurückgestellte Ereignisse"),
        ),
        Res::Offer => n(w("Offer", "Angebot"), w("Offers", "Angebote")),
    }
}

/// The title of the field at `path` of `resource`: the resource's own title for it where a
/// name means something of its own there, else the title of the field's name.
pub fn field_title(resource: &str, path: &str) -> Option<Words> {
    let own = match (resource, path) {
        ("order", "detail") | ("orderItem", "detail") => Some(w("Details", "Details")),
        ("order", "shipAddress.id") => Some(w("Host's address id", "Adressnummer des Händlers")),
        ("order", "detail.net") => Some(w("Net", "Netto")),
        ("order", "detail.gross") => Some(w("Total", "Gesamt")),
        ("order", "status") | ("orderItem", "status") => Some(w("Status", "Status")),
        ("product", "title") => Some(w("Title", "Titel")),
        ("product", "status") => Some(w("Product status", "Produktstatus")),
        ("product", "description") | ("brand", "detail.description") => {
            Some(w("Description", "Beschreibung"))
        }
        ("variant", "detail.price") => Some(w("Price (catalogue)", "Preis (Katalog)")),
        ("variant", "detail.rrp") => Some(w("RRP (catalogue)", "UVP (Katalog)")),
        ("file", "detail.host") => Some(w("Host", "Händler")),
        ("file", "detail.warehouse") => Some(w("Warehouse", "Lager")),
        ("file", "detail.startDate") => Some(w("Processing started", "Verarbeitung begonnen")),
        ("file", "detail.endDate") => Some(w("Processing ended", "Verarbeitung beendet")),
        ("file", "detail.error") => Some(w("Problems", "Probleme")),
        ("file", "fk_user") => Some(w("Uploaded by", "Hochgeladen von")),
        ("file", "createdDate") => Some(w("Uploaded", "Hochgeladen")),
        ("price", "price") => Some(w("Price", "Preis")),
        ("price", "startDate") => Some(w("From", "Ab")),
        ("price", "endDate") => Some(w("Until", "Bis")),
        ("offer", "title") => Some(w("Title", "Titel")),
        ("offer", "price") => Some(w("Price in effect", "Geltender Preis")),
        ("price", "fk_file") | ("image", "fk_file") => Some(w("From file", "Aus Datei")),
        ("user", "type") => Some(w("User type", "Benutzertyp")),
        ("user", "fk_sponsor") => Some(w("Sponsor", "Sponsor")),
        ("company", "fk_sponsor") => Some(w("Sponsored by", "Gesponsert von")),
        ("orderItem", "detail.reason") => Some(w("Reason rejected", "Ablehnungsgrund")),
        ("eventProblem", "resource") => Some(w("Resource", "Ressource")),
        ("eventProblem", "reason") => Some(w("Why", "Grund")),
        ("eventProblem", "createdDate") => Some(w("Set aside", "Zurückgestellt")),
        ("webhookDelivery", "createdDate") => Some(w("Queued", "Eingereiht")),
        _ => None,
    };
    own.or_else(|| name_title(path.rsplit('.').next().unwrap_or(path)))
}

/// The title of a field by its name, wherever it is declared.
fn name_title(name: &str) -> Option<Words> {
    Some(match name {
        "id" => w("Id", "Id"),
        "name" => w("Name", "Name"),
        "code" => w("Code", "Code"),
        "detail" => w("Details", "Details"),
        "createdDate" => w("Created", "Erstellt"),
        "updatedDate" => w("Last changed", "Zuletzt geändert"),
        "status" => w("Status", "Status"),
        "fk_company" => w("Company", "Firma"),
        "fk_brand" => w("Brand", "Marke"),
        "fk_warehouse" => w("Warehouse", "Lager"),
        "fk_host" => w("Host", "Händler"),
        "fk_store" => w("Store", "Shop"),
        "fk_brandStore" => w("Brand store", "Markenshop"),
        "fk_product" => w("Product", "Produkt"),
        "fk_variant" => w("Variant", "Variante"),
        "fk_order" => w("Order", "Bestellung"),
        "fk_user" => w("User", "Benutzer"),
        "fk_file" => w("File", "Datei"),
        "fk_webhook" => w("Webhook", "Webhook"),
        "fk_sponsor" => w("Sponsor", "Sponsor"),
        "country" => w("Country", "Land"),
        "countryCode" => w("Country code", "Ländercode"),
        "vatNumber" => w("VAT number", "USt-IdNr."),
        "contactEmail" => w("Contact email", "Kontakt-E-Mail"),
        "website" => w("Website", "Website"),
        "description" => w("Description", "Beschreibung"),
        "town" => w("Town", "Ort"),
        "url" => w("Address (URL)", "Adresse (URL)"),
        "currency" => w("Currency", "Währung"),
        "stockType" => w("Stock offered", "Angebotener Bestand"),
        "adjustType" => w("Price adjustment", "Preisanpassung"),
        "adjustValue" => w("Adjustment amount", "Anpassungsbetrag"),
        "stockPercent" => w(
            "Share of stock offered (%)",
            "Angebotener Bestandsanteil (%)",
        ),
        "stockBuffer" => w("Units held back", "Zurückgehaltene Einheiten"),
        "stockMax" => w("Most units offered", "Höchstens angebotene Einheiten"),
        "fixedQuantity" => w("Fixed quantity", "Feste Menge"),
        "hostSku" => w("Host's SKU", "Artikelnummer des Händlers"),
        "priceStart" => w("Price valid from", "Preis gültig ab"),
        "priceEnd" => w("Price valid until", "Preis gültig bis"),
        "title" => w("Title", "Anrede"),
        "category" => w("Category", "Kategorie"),
        "productBrand" => w("Brand on the label", "Marke auf dem Etikett"),
        "season" => w("Season", "Saison"),
        "origin" => w("Origin", "Herkunft"),
        "composition" => w("Composition", "Zusammensetzung"),
        "careInstructions" => w("Care instructions", "Pflegehinweise"),
        "importFile" => w("Last written by file", "Zuletzt aus Datei"),
        "commodityCode" => w("Commodity code", "Warennummer"),
        "barcode" => w("Barcode", "Barcode"),
        "colour" => w("Colour", "Farbe"),
        "sequence" => w("Sort position", "Sortierung"),
        "size" => w("Size", "Größe"),
        "rrp" => w("RRP", "UVP"),
        "price" => w("Price", "Preis"),
        "vatable" => w("VAT applies", "Umsatzsteuerpflichtig"),
        "inStock" => w("In stock", "Am Lager"),
        "demand" => w("Ordered, not shipped", "Bestellt, nicht versandt"),
        "supply" => w("Expected in", "Erwarteter Zugang"),
        "available" => w("Available", "Verfügbar"),
        "lastUpdate" => w("Counted", "Gezählt"),
        "brandOrderRef" => w("Order number", "Bestellnummer"),
        "hostOrderRef" => w("Host's order number", "Bestellnummer des Händlers"),
        "hostCustOrderRef" => w("Customer's order number", "Bestellnummer des Kunden"),
        "orderDate" => w("Ordered", "Bestellt"),
        "shipDate" => w("Shipped", "Versandt"),
        "sentToWH" => w("Sent to warehouse", "An das Lager gegeben"),
        "deliveryDate" => w("Delivered", "Zugestellt"),
        "carrier" => w("Carrier", "Versanddienst"),
        "trackingRef" => w("Tracking number", "Sendungsnummer"),
        "hostCarrier" => w("Delivery asked for", "Gewünschte Lieferart"),
        "hostStatus" => w("Status at the host", "Status beim Händler"),
        "customerMessage" => w("Message from the customer", "Nachricht des Kunden"),
        "net" => w("Net", "Netto"),
        "gross" => w("Gross", "Brutto"),
        "vat" => w("VAT", "USt."),
        "shippingGross" => w("Shipping", "Versandkosten"),
        "shippingTax" => w("Shipping VAT", "USt. auf Versand"),
        "shipAddress" => w("Ship to", "Lieferadresse"),
        "billAddress" => w("Bill to", "Rechnungsadresse"),
        "forename" => w("First name", "Vorname"),
        "surname" => w("Surname", "Nachname"),
        "company" => w("Company", "Firma"),
        "line1" => w("Address line 1", "Adresszeile 1"),
        "line2" => w("Address line 2", "Adresszeile 2"),
        "county" => w("County", "Region"),
        "postcode" => w("Postcode", "Postleitzahl"),
        "phone" => w("Phone", "Telefon"),
        "email" => w("Email", "E-Mail"),
        "orderQty" => w("Ordered", "Bestellt"),
        "itemPrice" => w("Price", "Preis"),
        "lineNet" => w("Line net", "Position netto"),
        "lineTax" => w("Line VAT", "Position USt."),
        "lineGross" => w("Line total", "Position gesamt"),
        "shipQty" => w("Shipped", "Versandt"),
        "returnQty" => w("Returned", "Retourniert"),
        "gift" => w("Gift", "Geschenk"),
        "reason" => w("Reason", "Grund"),
        "hostItemRef" => w("Host's line number", "Positionsnummer des Händlers"),
        "returnDate" => w("Returned on", "Retourniert am"),
        "type" => w("Type", "Typ"),
        "lang" => w("Language", "Sprache"),
        "companies" => w("Further companies", "Weitere Firmen"),
        "fileType" => w("File type", "Dateityp"),
        "fileName" => w("File name", "Dateiname"),
        "fileMime" => w("Format", "Format"),
        "startDate" => w("Start", "Beginn"),
        "endDate" => w("End", "Ende"),
        "error" => w("Problems", "Probleme"),
        "rowsRead" => w("Rows read", "Gelesene Zeilen"),
        "rowsApplied" => w("Rows applied", "Übernommene Zeilen"),
        "rowsSkipped" => w("Rows skipped", "Übersprungene Zeilen"),
        "position" => w("Position", "Position"),
        "prefix" => w("Starts with", "Beginnt mit"),
        "grants" => w("Grants", "Rechte"),
        "lastUsed" => w("Last used", "Zuletzt benutzt"),
        "revoked" => w("Revoked", "Widerrufen"),
        "events" => w("Events", "Ereignisse"),
        "active" => w("Active", "Aktiv"),
        "eventId" => w("Event", "Ereignis"),
        "eventType" => w("Event type", "Ereignistyp"),
        "eventIds" => w("Events carried", "Enthaltene Ereignisse"),
        "batch" => w("In batches", "Gebündelt"),
        "attempts" => w("Attempts", "Versuche"),
        "lastResponseCode" => w("Last answer", "Letzte Antwort"),
        "lastError" => w("Last error", "Letzter Fehler"),
        "nextTry" => w("Next try", "Nächster Versuch"),
        "deliveredDate" => w("Delivered", "Zugestellt"),
        "recordId" => w("Record", "Datensatz"),
        "eventDate" => w("Happened", "Geschehen"),
        _ => return None,
    })
}

/// The word of a code a field's domain allows (a status, a line status, a reason, a file
/// type, a user type, an event type); the same code means the same thing wherever it occurs.
pub fn code_word(code: &str) -> Option<Words> {
    Some(match code {
        // Orders (docs/API.md, "Orders: intake, lifecycle and stock").
        "new" => w("New", "Neu"),
        "accepted" => w("Accepted", "Angenommen"),
        "rejected" => w("Rejected", "Abgelehnt"),
        "partDispatched" => w("Part dispatched", "Teilweise versandt"),
        "dispatched" => w("Dispatched", "Versandt"),
        "delivered" => w("Delivered", "Zugestellt"),
        "returned" => w("Returned", "Retourniert"),
        "cancelled" => w("Cancelled", "Storniert"),
        // Order lines and why one is rejected.
        "ACC" => w("Accepted", "Angenommen"),
        "REJ" => w("Rejected", "Abgelehnt"),
        "DSP" => w("Shipped", "Versandt"),
        "CAN" => w("Cancelled", "Storniert"),
        "RET" => w("Returned", "Retourniert"),
        "OUT_OF_STOCK" => w("Out of stock", "Nicht vorrätig"),
        "DISCONTINUED" => w("Discontinued", "Nicht mehr im Sortiment"),
        "PRICE_MISMATCH" => w("Price mismatch", "Preis stimmt nicht"),
        "OTHER" => w("Other reason", "Anderer Grund"),
        // Files (their status and type) and webhook deliveries.
        "pending" => w("Waiting", "Wartet"),
        "processing" => w("Processing", "In Verarbeitung"),
        "processed" => w("Processed", "Verarbeitet"),
        "failed" => w("Failed", "Fehlgeschlagen"),
        "retrying" => w("Retrying", "Wird wiederholt"),
        "product" => w("Products", "Produkte"),
        "stock" => w("Stock", "Bestand"),
        "price" => w("Prices", "Preise"),
        "image" => w("Images", "Bilder"),
        "orderDispatch" => w("Order dispatch", "Versandmeldung"),
        // Brand stores' rules and offers (docs/API.md, "Offers").
        "live" => w("Live stock", "Aktueller Bestand"),
        "fixed" => w("Fixed", "Fest"),
        "none" => w("None", "Keiner"),
        "percent" => w("Percent", "Prozent"),
        "outOfStock" => w("Out of stock", "Nicht vorrätig"),
        "inactive" => w("Inactive", "Inaktiv"),
        "offer.updated" => w("Offer changed", "Angebot geändert"),
        "offer.deleted" => w("Offer withdrawn", "Angebot zurückgezogen"),
        "batch" => w("Batch of events", "Ereignisbündel"),
        // Users.
        "active" => w("Active", "Aktiv"),
        "disabled" => w("Disabled", "Deaktiviert"),
        "admin" => w("Administrator", "Administrator"),
        "sponsor" => w("Sponsor", "Sponsor"),
        "company" => w("Company", "Firma"),
        "host" => w("Host", "Händler"),
        "warehouse" => w("Warehouse", "Lager"),
        // Events (docs/API.md, "Events and webhooks").
        "order.created" => w("Order received", "Bestellung eingegangen"),
        "order.updated" => w("Order changed", "Bestellung geändert"),
        "file.processed" => w("File processed", "Datei verarbeitet"),
        "file.failed" => w("File failed", "Datei fehlgeschlagen"),
        "stock.updated" => w("Stock changed", "Bestand geändert"),
        "price.updated" => w("Price changed", "Preis geändert"),
        "product.updated" => w("Product changed", "Produkt geändert"),
        _ => return None,
    })
}
