//! Typed handles of the resources: code outside the catalog names a resource by a [`Res`],
//! never by its URL name as a string, so that renaming a resource is a compile error and not a
//! lookup that fails at run time. [`crate::Catalog::get`] gives the declaration of a handle;
//! the catalog checks when it loads that every handle names exactly one declared resource.

/// A resource of the API, by handle. Its URL name is declared here once and the declarations
/// in the catalog take it from [`Res::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Res {
    Company,
    Brand,
    Warehouse,
    Host,
    Store,
    BrandStore,
    Product,
    Variant,
    Stock,
    Order,
    OrderItem,
    User,
    File,
    Price,
    Image,
    ApiKey,
    Webhook,
    WebhookDelivery,
    EventProblem,
    Offer,
}

impl Res {
    /// Every handle, in documentation order.
    pub const ALL: [Res; 20] = [
        Res::Company,
        Res::Brand,
        Res::Warehouse,
        Res::Host,
        Res::Store,
        Res::BrandStore,
        Res::Product,
        Res::Variant,
        Res::Stock,
        Res::Order,
        Res::OrderItem,
        Res::User,
        Res::File,
        Res::Price,
        Res::Image,
        Res::ApiKey,
        Res::Webhook,
        Res::WebhookDelivery,
        Res::EventProblem,
        Res::Offer,
    ];

    /// The resource's URL name (`/api/<name>`), as requests and events spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Res::Company => "company",
            Res::Brand => "brand",
            Res::Warehouse => "warehouse",
            Res::Host => "host",
            Res::Store => "store",
            Res::BrandStore => "brandStore",
            Res::Product => "product",
            Res::Variant => "variant",
            Res::Stock => "stock",
            Res::Order => "order",
            Res::OrderItem => "orderItem",
            Res::User => "user",
            Res::File => "file",
            Res::Price => "price",
            Res::Image => "image",
            Res::ApiKey => "apiKey",
            Res::Webhook => "webhook",
            Res::WebhookDelivery => "webhookDelivery",
            Res::EventProblem => "eventProblem",
            Res::Offer => "offer",
        }
    }

    /// The handle of a URL name, for the one place a name arrives from outside: a request's
    /// path (and stored names such as an event's type).
    pub fn named(name: &str) -> Option<Res> {
        Res::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The position of the handle in [`Res::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Res {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Res;

    #[test]
    fn every_handle_is_at_its_index_and_named_once() {
        for (i, res) in Res::ALL.into_iter().enumerate() {
            assert_eq!(res.index(), i);
            assert_eq!(Res::named(res.name()), Some(res));
        }
    }
}
