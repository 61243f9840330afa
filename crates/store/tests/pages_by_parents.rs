//! A page in id order whose scope is a few parents' records (a host's offers, through its
//! stores) is read parent by parent (`PageStrategy::ByParents`): every page of it equals the
//! page read by walking the table in order, on both backends, with and without a filter.

mod support;

use brandhub_catalog::{UserType, catalog};
use brandhub_query::parse::parse_query_string;
use brandhub_query::plan::{Viewer, plan_read};
use brandhub_query::sql::scope_parents;
use brandhub_store::{Store, Timing};
use support::{Db, on_both};

/// The values of `field` on a page of `resource` as `viewer` reads it.
async fn values(
    store: &Store,
    viewer: &Viewer,
    resource: &str,
    query: &str,
    field: &str,
) -> Vec<String> {
    let resource = catalog().resource(resource).expect("a resource");
    let versions = store.versions(&Timing::default()).await.unwrap();
    let plan = plan_read(resource, &parse_query_string(query).unwrap(), viewer).unwrap();
    let page = store
        .render_page(&plan, viewer, &versions, &Timing::default())
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&page.body).unwrap();
    json["response"][resource.name]
        .as_array()
        .unwrap_or_else(|| panic!("no {} in {json}", resource.name))
        .iter()
        .map(|r| r[field].as_str().unwrap().to_string())
        .collect()
}

async fn a_host_reads_its_offers_by_parents_as_in_order(db: Db) {
    let Some((store, _dir, demo)) = support::demo_store(db, "by_parents", "host", 2000).await
    else {
        return;
    };
    let mut viewers = Vec::new();
    for user_type in [UserType::Host, UserType::Company] {
        viewers.push(support::demo_viewer(&store, &demo, user_type).await);
    }
    let host = viewers[0].clone();
    let offer = catalog().resource("offer").unwrap();
    let plan = |query: &str, viewer: &Viewer| {
        plan_read(offer, &parse_query_string(query).unwrap(), viewer).unwrap()
    };
    assert!(
        scope_parents(&plan("pageSize=10", &host)).is_some(),
        "a host's page of offers in id order can be read by its stores"
    );
    assert!(
        scope_parents(&plan("pageSize=10&order_by=id", &host)).is_none(),
        "a page with an order of its own is not"
    );
    assert!(
        scope_parents(&plan("pageSize=10", &Viewer::admin())).is_none(),
        "nor one without a scope"
    );
    // Pages where the walks of two parents meet, over every viewer and filter.
    let mut meetings = 0;
    for (viewer, filter) in viewers
        .iter()
        .flat_map(|v| ["", "&status=active"].map(move |f| (v, f)))
    {
        // Every offer in id order (the walk in order), with its parent: offers cluster by
        // store and brand, so the pages around a change of parent are where the parents'
        // walks meet.
        let mut listed: Vec<(String, String)> = Vec::new();
        for page in 1.. {
            let query = format!(
                "pageSize=1000&page={page}&order_by=id&fields=id,fk_store,fk_brand{filter}"
            );
            let ids = values(&store, viewer, "offer", &query, "id").await;
            // The parents of both scopes: a host's stores, a company's brands.
            let stores = values(&store, viewer, "offer", &query, "fk_store").await;
            let brands = values(&store, viewer, "offer", &query, "fk_brand").await;
            let stores: Vec<String> = stores
                .into_iter()
                .zip(brands)
                .map(|(s, b)| s + &b)
                .collect();
            let full = ids.len() == 1000;
            listed.extend(ids.into_iter().zip(stores));
            if !full {
                break;
            }
        }
        let changes: Vec<usize> = (1..listed.len())
            .filter(|&i| listed[i].1 != listed[i - 1].1)
            .collect();
        meetings += changes.len();
        let mut pages: std::collections::BTreeSet<usize> = [1, listed.len() / 10 + 1].into();
        for change in changes {
            pages.extend([change / 10, change / 10 + 1, change / 10 + 2]);
        }
        for page in pages.into_iter().filter(|&p| p >= 1) {
            let by_parents = values(
                &store,
                viewer,
                "offer",
                &format!("pageSize=10&page={page}&fields=id{filter}"),
                "id",
            )
            .await;
            let in_order: Vec<String> = listed
                .iter()
                .skip((page - 1) * 10)
                .take(10)
                .map(|(id, _)| id.clone())
                .collect();
            assert_eq!(by_parents, in_order, "page {page}{filter}");
        }
    }
    assert!(meetings > 0, "some viewer's offers are in several parents");
}

on_both!(a_host_reads_its_offers_by_parents_as_in_order);
