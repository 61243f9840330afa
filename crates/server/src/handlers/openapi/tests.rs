//! Tests of the documents: what each view leaves out, and what the schemas and paths carry
//! from the catalog.

use super::*;
use brandhub_sheet::FileType;

#[test]
fn a_user_types_document_leaves_out_what_is_hidden_from_it() {
    let every = document(None);
    let warehouse = document(Some(UserType::Warehouse));
    let order = |doc: &Value| {
        doc["components"]["schemas"]["Order"]["properties"]["detail"]["properties"].clone()
    };
    assert!(order(&every).get("net").is_some());
    assert!(
        order(&warehouse).get("net").is_none(),
        "money is hidden from warehouses"
    );
    let host = document(Some(UserType::Host));
    assert!(
        every["components"]["schemas"]["Price"]["properties"]
            .get("fk_file")
            .is_some()
    );
    assert!(
        host["components"]["schemas"]["Price"]["properties"]
            .get("fk_file")
            .is_none()
    );
    let filters = |doc: &Value| {
        doc["paths"]["/api/price"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "filters")
            .unwrap()["schema"]["properties"]
            .clone()
    };
    assert!(filters(&every).get("fk_file").is_some());
    assert!(
        filters(&host).get("fk_file").is_none(),
        "a host cannot filter on it"
    );
}

#[test]
fn the_order_schema_carries_its_lifecycle_from_the_catalog() {
    use brandhub_catalog::lifecycle::{ORDER_STATUSES, REJECT_REASONS, TRANSITIONS};
    for view in [None, Some(UserType::Warehouse)] {
        let doc = document(view);
        let lifecycle = &doc["components"]["schemas"]["Order"]["x-brandhub-lifecycle"];
        assert_eq!(lifecycle["status"], "status", "{lifecycle}");
        assert_eq!(lifecycle["lines"], "order_orderItem");
        let codes = |list: &Value| -> Vec<String> {
            list.as_array()
                .unwrap_or_else(|| panic!("a list: {list}"))
                .iter()
                .map(|s| {
                    let word = s["word"].as_str().unwrap_or_default();
                    assert!(!word.is_empty() && !word.contains('_'), "{s}");
                    s["code"].as_str().unwrap().to_string()
                })
                .collect()
        };
        assert_eq!(codes(&lifecycle["statuses"]), ORDER_STATUSES);
        assert_eq!(
            codes(&lifecycle["lineStatuses"]),
            ["ACC", "REJ", "DSP", "CAN", "RET"]
        );
        assert_eq!(codes(&lifecycle["reasons"]["codes"]), REJECT_REASONS);
        assert_eq!(lifecycle["reasons"]["field"], "detail.reason");
        assert_eq!(lifecycle["statuses"][3]["word"], "Part dispatched");
        let steps = lifecycle["steps"].as_array().unwrap();
        assert_eq!(steps.len(), TRANSITIONS.len());
        let step = |name: &str| steps.iter().find(|s| s["step"] == name).unwrap().clone();
        let dispatch = step("dispatch");
        assert_eq!(dispatch["from"], json!(["accepted", "partDispatched"]));
        assert_eq!(dispatch["to"], json!(["partDispatched", "dispatched"]));
        // Who may take it, admins and sponsors included, as the order engine decides.
        assert_eq!(
            dispatch["who"],
            json!(["admin", "sponsor", "company", "warehouse"])
        );
        assert_eq!(
            dispatch["fields"],
            json!(["carrier", "trackingRef", "shipDate"])
        );
        assert_eq!(dispatch["lineFields"], json!(["shipQty"]));
        assert_eq!(dispatch["byFile"], true);
        assert_eq!(
            step("cancellation")["who"],
            json!(["admin", "sponsor", "company", "host"])
        );
        assert_eq!(step("cancellation")["lineFields"], json!([]));
        assert_eq!(
            step("acknowledgement")["lineFields"],
            json!(["status", "detail.reason"])
        );
        assert_eq!(step("return")["lineFields"], json!(["returnQty"]));
        assert_eq!(
            lifecycle["actions"],
            json!([{"path": "/api/order/dispatch", "step": "dispatch"}])
        );
    }
    // Only resources with a lifecycle carry one.
    assert!(
        document(None)["components"]["schemas"]["Stock"]
            .get("x-brandhub-lifecycle")
            .is_none()
    );
}

#[test]
fn a_field_set_in_bulk_has_its_path_with_the_ways_its_elements_name_records() {
    let doc = document(None);
    let post = &doc["paths"]["/api/offer/hostSku"]["post"];
    let body = &post["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["maxItems"], 1000);
    assert_eq!(
        body["items"]["oneOf"],
        json!([{"required": ["id", "hostSku"]},
                   {"required": ["fk_brandStore", "barcode", "hostSku"]},
                   {"required": ["fk_brandStore", "fk_variant", "hostSku"]}])
    );
    assert!(doc["paths"].get("/api/stock/hostSku").is_none());
    let line = &doc["paths"]["/api/order"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        ["properties"]["order_orderItem"]["items"];
    assert_eq!(line["properties"]["hostSku"]["type"], "string", "{line}");
}

#[test]
fn schemas_carry_labels_titles_words_and_currencies_from_the_catalog() {
    let doc = document(None);
    let schemas = &doc["components"]["schemas"];
    let stock = &schemas["Stock"];
    assert_eq!(
        stock["x-brandhub-label"]["template"],
        "{stock_variant} @ {stock_warehouse}"
    );
    assert_eq!(
        stock["x-brandhub-label"]["fields"][5],
        "stock_warehouse.name"
    );
    assert_eq!(stock["x-brandhub-names"]["de"]["many"], "Bestände");
    assert_eq!(stock["properties"]["stock_warehouse"]["title"], "Warehouse");
    assert_eq!(
        stock["properties"]["inStock"]["x-brandhub-titles"],
        json!({"en": "In stock", "de": "Am Lager"})
    );
    let order = &schemas["Order"];
    assert_eq!(
        order["properties"]["sentToWH"]["title"],
        "Sent to warehouse"
    );
    assert_eq!(
        order["properties"]["status"]["x-brandhub-words"]["dispatched"]["de"],
        "Versandt"
    );
    assert_eq!(
        order["properties"]["detail"]["properties"]["gross"]["x-brandhub-money"],
        json!({"currency": "order_orderItem.currency"})
    );
    assert_eq!(
        order["properties"]["order_orderItem"]["x-brandhub-titles"]["de"],
        "Bestellpositionen"
    );
    assert_eq!(
        order["x-brandhub-lifecycle"]["lineStatuses"][2]["words"],
        json!({"en": "Shipped", "de": "Versandt"})
    );
    assert_eq!(
        schemas["Price"]["properties"]["price"]["x-brandhub-money"],
        json!({"currency": "currency"})
    );
    // Every property of every record has a title in each language.
    for resource in catalog().resources() {
        let schema = &schemas[schema_name(resource)];
        for (name, property) in schema["properties"].as_object().unwrap() {
            assert!(
                property["x-brandhub-titles"]["de"].is_string(),
                "{}.{name}",
                resource.name
            );
        }
    }
}

#[test]
fn a_lists_words_and_length_bound_its_elements() {
    let doc = document(None);
    let events = &doc["paths"]["/api/webhook"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"]["properties"]["events"];
    assert_eq!(events["type"], "array");
    assert!(events.get("enum").is_none(), "{events}");
    assert!(
        events["items"]["enum"]
            .as_array()
            .is_some_and(|w| !w.is_empty()),
        "{events}"
    );
}

#[test]
fn every_resource_has_paths_and_a_schema() {
    let doc = document(None);
    for resource in catalog().resources() {
        assert!(doc["paths"][format!("/api/{}", resource.name)]["get"].is_object());
        assert!(doc["components"]["schemas"][schema_name(resource)].is_object());
    }
    let order = &doc["components"]["schemas"]["Order"]["properties"];
    assert_eq!(
        order["detail"]["properties"]["net"]["x-hidden-from"],
        json!(["warehouse"])
    );
    assert!(
        doc["components"]["schemas"]["ApiKey"]["properties"]
            .get("secretHash")
            .is_none()
    );
    assert!(doc["paths"]["/api/file"]["post"]["responses"]["201"].is_object());
    assert!(doc["paths"]["/api/file/{id}/content"]["get"].is_object());
    assert!(doc["paths"]["/api/file/template/{fileType}"]["get"].is_object());
    assert!(doc["paths"]["/api/stock"]["post"].is_object());
    let stock = &doc["paths"]["/api/stock/{id}"]["patch"]["requestBody"]["content"]["application/json"]
        ["schema"]["properties"];
    assert!(stock["inStock"].is_object() && stock.get("lastUpdate").is_none());
    assert!(doc["paths"]["/api/orderItem"].get("post").is_none());
    assert!(doc["paths"]["/api/orderItem/{id}"].get("patch").is_none());
    // Writes come from the catalog's declarations.
    for resource in catalog().resources() {
        let list = &doc["paths"][format!("/api/{}", resource.name)];
        let by_id = &doc["paths"][format!("/api/{}/{{id}}", resource.name)];
        assert_eq!(
            list.get("post").is_some(),
            resource.methods(false).contains(&"POST"),
            "{}",
            resource.name
        );
        assert_eq!(
            by_id.get("patch").is_some(),
            resource.methods(true).contains(&"PATCH")
        );
        assert_eq!(
            by_id.get("delete").is_some(),
            resource.methods(true).contains(&"DELETE")
        );
    }
    let user =
        &doc["paths"]["/api/user"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(user["required"], json!(["name", "email", "type"]));
    assert!(user["properties"]["detail"]["properties"]["lang"].is_object());
    assert!(doc["paths"]["/api/user/{id}"]["patch"]["requestBody"].is_object());
    assert!(doc["paths"]["/api/apiKey/{id}"]["delete"]["responses"]["204"].is_object());
    assert!(doc["paths"]["/api/apiKey"]["post"]["responses"]["201"].is_object());
}

#[test]
fn links_and_uploads_say_what_a_form_offers() {
    let doc = document(None);
    let user = &doc["paths"]["/api/user"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        ["properties"];
    assert_eq!(user["fk_company"]["x-brandhub-link"], "company");
    assert_eq!(user["fk_warehouse"]["x-brandhub-link"], "warehouse");
    assert!(user["name"].get("x-brandhub-link").is_none());
    let store = &doc["components"]["schemas"]["BrandStore"]["properties"];
    assert_eq!(store["fk_store"]["x-brandhub-link"], "store");
    let uploads = doc["paths"]["/api/file"]["post"]["x-brandhub-uploads"]
        .as_array()
        .expect("a list of file types");
    let of = |user_type: &str| -> Vec<&str> {
        uploads
            .iter()
            .filter(|u| {
                u["userTypes"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t == user_type))
            })
            .filter_map(|u| u["fileType"].as_str())
            .collect()
    };
    assert_eq!(of("warehouse"), ["stock", "orderDispatch"]);
    assert_eq!(of("admin").len(), FileType::ALL.len());
    assert!(of("host").is_empty());
}
