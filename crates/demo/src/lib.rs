//! Demo data for brandhub: a fictional fashion marketplace with companies, brands, hosts and
//! their stores, products with variants and barcodes, stock, orders, prices, images, uploaded
//! files and one user of every type.
//!
//! Generation is pure and deterministic: the same [`DemoOptions`] give byte-identical records,
//! ids and key secrets on every machine. All randomness comes from ChaCha8 streams derived from
//! the seed (one stream per phase, so a change in one phase leaves the others' choices alone);
//! ids are UUIDv7 whose timestamp is 2026-01-01 plus one millisecond per id, so they increase in
//! generation order. Every date lies between 2025-06-01 and 2026-11-01, but for the prices
//! dated around [`DemoOptions::now`], the moment the data set is loaded (some start or end in
//! the minutes after it, so that a demo shows prices changing).
//!
//! Records are streamed in chunks of at most [`MAX_CHUNK_RECORDS`] records, one resource per
//! chunk, in an order where every foreign key points at a record of an earlier chunk: company
//! (the two sponsors in a chunk of their own), brand, warehouse, host, store, brandStore, user,
//! file, product, variant, stock, order, orderItem, price, image, webhook (inactive ones, see
//! `hooks`). Only compact id lists are
//! kept between phases, so a million variants (about 3.5 million records) stream in bounded
//! memory. `apiKey` records are not generated: the loader makes one key per
//! [`DemoCredential`] and stores the hash of its secret.
//!
//! Money is consistent: an order item's `lineGross` is `itemPrice × orderQty` in the store's
//! currency with VAT of the store's country included (none for non-vatable variants),
//! `lineNet + lineTax = lineGross`; the order's `gross` is its lines' gross plus
//! `shippingGross`, its `vat` the lines' tax plus `shippingTax`, and `net = gross − vat`.

#![deny(missing_docs)]

mod barcode;
mod catalogue;
mod emit;
mod files;
mod hooks;
mod ids;
mod names;
mod orders;
mod org;
mod people;
mod random;
mod time;

use std::ops::Range;

use brandhub_catalog::{Record, Resource, UserType};
use rand::SeedableRng;

pub use barcode::is_valid_ean13;
pub use emit::CHUNK_RECORDS as MAX_CHUNK_RECORDS;

use emit::Emitter;
use ids::{Id, IdGen};
use names::Country;

/// The generator behind every random choice: ChaCha8, the same output on every platform.
pub(crate) type DemoRng = rand::rngs::ChaCha8Rng;

/// How much demo data to make, and from which seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoOptions {
    /// The number of variants; every other count follows from it (products = scale / 5 rounded up,
    /// brands = max(4, scale / 5000), orders = scale / 5, prices = scale / 4, ...).
    pub scale: u64,
    /// The seed of every random choice: the same seed and scale give the same data.
    pub seed: u64,
    /// The moment the data set is loaded, in seconds since the Unix epoch: a few prices start
    /// and end around it, some in the minutes after. The loader passes its clock; the
    /// generator never reads one, so the same options give the same data.
    pub now: i64,
}

impl Default for DemoOptions {
    /// 2,000 variants from the documented seed: small enough for tests and a quick demo.
    fn default() -> DemoOptions {
        DemoOptions {
            scale: 2_000,
            seed: 20_260_101,
            now: time::DEFAULT_NOW,
        }
    }
}

/// Records of one resource, to be stored before any later chunk (which may refer to them).
#[derive(Debug, Clone)]
pub struct Chunk {
    /// The resource the records belong to.
    pub resource: &'static Resource,
    /// At most [`MAX_CHUNK_RECORDS`] records in the resource's layout.
    pub records: Vec<Record>,
}

/// One demo user and the API key the loader should create for it, so the docs and the
/// command line can show working credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoCredential {
    /// The id of the generated user record.
    pub user_id: String,
    /// The user's e-mail (`<type>@demo.brandhub.test`).
    pub email: String,
    /// The user's display name.
    pub name: String,
    /// The user's type, which decides what the key can see.
    pub user_type: UserType,
    /// The id the loader gives the key (generated here so it is deterministic too).
    pub key_id: String,
    /// The key's name.
    pub key_name: String,
    /// The key secret (`bhk_` and 30 letters and digits); the loader stores only its hash.
    pub secret: String,
}

/// What a generation produced: the credentials to create keys for, and record counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSummary {
    /// One credential per generated user, admin first.
    pub credentials: Vec<DemoCredential>,
    /// Records generated per resource name, in generation order.
    pub counts: Vec<(&'static str, u64)>,
}

/// Streams chunks (at most 10_000 records each) in an order where every foreign key points at a
/// record of an earlier chunk.
pub fn generate(options: &DemoOptions, sink: &mut dyn FnMut(Chunk)) -> DemoSummary {
    let mut world = World::new(options);
    let mut out = Emitter::new(sink);
    org::companies(&mut world, &mut out);
    org::brands(&mut world, &mut out);
    org::warehouses(&mut world, &mut out);
    org::hosts(&mut world, &mut out);
    org::stores(&mut world, &mut out);
    org::brand_stores(&mut world, &mut out);
    let credentials = org::users(&mut world, &mut out);
    files::files(&mut world, &mut out);
    catalogue::products(&mut world, &mut out);
    catalogue::variants(&mut world, &mut out);
    // Stock demand is the open quantity of the orders (docs/API.md, "Orders: intake, lifecycle and stock"): the orders are planned
    // once ahead (their ids handed back), then generated for real after the stock.
    let open = {
        let ids = world.ids.mark();
        let mut discard = |_: Chunk| {};
        let mut ahead = Emitter::new(&mut discard);
        let plans = orders::orders(&mut world, &mut ahead);
        world.ids.rewind(ids);
        orders::open_demand(&world, &plans)
    };
    catalogue::stock(&mut world, &mut out, &open);
    let plans = orders::orders(&mut world, &mut out);
    orders::order_items(&mut world, &plans, &mut out);
    drop(plans);
    catalogue::prices(&mut world, &mut out);
    catalogue::images(&mut world, &mut out);
    hooks::webhooks(&mut world, &credentials, &mut out);
    DemoSummary {
        credentials,
        counts: out.finish(),
    }
}

/// Convenience for tests: all chunks collected.
pub fn generate_all(options: &DemoOptions) -> (Vec<Chunk>, DemoSummary) {
    let mut chunks = Vec::new();
    let summary = generate(options, &mut |chunk| chunks.push(chunk));
    (chunks, summary)
}

/// The random streams of the phases (ChaCha stream numbers under the one seed).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Ids = 1,
    Secrets,
    Companies,
    Brands,
    Warehouses,
    Hosts,
    Stores,
    BrandStores,
    Users,
    Files,
    Products,
    Variants,
    Stock,
    Orders,
    OrderItems,
    Prices,
    Images,
    Webhooks,
    /// Brand stores' stock rules and price adjustments (a stream of their own, so that the
    /// choice of stores stays as it was).
    Rules,
}

/// The sizes every phase works from, derived from the scale.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub variants: usize,
    pub products: usize,
    pub brands: usize,
    pub companies: usize,
}

impl Sizes {
    /// The sizes at a scale (number of variants).
    fn of(scale: u64) -> Sizes {
        let variants = usize::try_from(scale).expect("the scale fits in memory");
        let brands = (variants / 5_000).max(4);
        Sizes {
            variants,
            products: variants.div_ceil(5),
            brands,
            companies: (brands / 2).max(2),
        }
    }
}

/// A brand-owning company.
pub(crate) struct Company {
    pub id: Id,
    /// The name without its legal suffix, for e-mail domains and warehouse names.
    pub short_name: String,
    pub country: &'static Country,
    pub warehouse: Option<Id>,
}

/// A brand and what later phases need of it.
pub(crate) struct Brand {
    pub id: Id,
    pub company: usize,
    pub code: String,
    pub name: String,
    /// Indexes into `World::hosts` of the hosts selling the brand (through its brand stores).
    pub hosts: Vec<usize>,
    /// Its processed product and image files.
    pub product_file: Option<Id>,
    pub image_file: Option<Id>,
    /// Its processed price files and the host index each is for.
    pub price_files: Vec<(Id, usize)>,
    /// Its products (indexes into `World::products`, contiguous).
    pub products: Range<usize>,
    /// Its variants (indexes into `World::variants`, contiguous).
    pub variants: Range<usize>,
}

/// A selling channel.
pub(crate) struct Host {
    pub id: Id,
    pub code: String,
}

/// A storefront of a host.
pub(crate) struct Store {
    pub id: Id,
    pub host: usize,
    pub country: &'static Country,
    pub currency: &'static str,
}

/// A brand sold in a store.
pub(crate) struct BrandStore {
    pub id: Id,
    pub brand: usize,
    pub store: usize,
    pub warehouse: Id,
}

/// The users files are uploaded by.
pub(crate) struct Uploaders {
    pub admin: Id,
    /// Company users and the company indexes each works for.
    pub company_users: Vec<(Id, Vec<usize>)>,
}

/// A product, compactly.
pub(crate) struct Product {
    pub id: Id,
    pub brand: u32,
    /// Its number within the brand (the `P000001` of its code).
    pub number: u32,
    pub first_variant: u32,
    pub variant_count: u8,
    pub colour: u8,
    pub vatable: bool,
    /// Recommended retail price in pence.
    pub rrp: u32,
}

/// A variant, compactly.
pub(crate) struct Variant {
    pub id: Id,
    pub product: u32,
    /// Current selling price in pence (at or below the product's rrp).
    pub price: u32,
}

/// Everything generated so far that later phases refer to.
pub(crate) struct World {
    pub seed: u64,
    /// [`DemoOptions::now`].
    pub now: i64,
    pub sizes: Sizes,
    pub ids: IdGen,
    pub sponsors: Vec<Id>,
    pub companies: Vec<Company>,
    pub brands: Vec<Brand>,
    pub hosts: Vec<Host>,
    pub stores: Vec<Store>,
    pub brand_stores: Vec<BrandStore>,
    pub uploaders: Option<Uploaders>,
    pub products: Vec<Product>,
    pub variants: Vec<Variant>,
}

impl World {
    /// An empty world with the id and phase streams of the seed.
    fn new(options: &DemoOptions) -> World {
        World {
            seed: options.seed,
            now: options.now,
            sizes: Sizes::of(options.scale),
            ids: IdGen::new(stream(options.seed, Stream::Ids)),
            sponsors: Vec::new(),
            companies: Vec::new(),
            brands: Vec::new(),
            hosts: Vec::new(),
            stores: Vec::new(),
            brand_stores: Vec::new(),
            uploaders: None,
            products: Vec::new(),
            variants: Vec::new(),
        }
    }

    /// The random stream of a phase.
    pub(crate) fn rng(&self, stream_of: Stream) -> DemoRng {
        stream(self.seed, stream_of)
    }

    /// A new id.
    pub(crate) fn id(&mut self) -> Id {
        self.ids.next()
    }
}

/// The ChaCha8 stream of a phase: the seed's key with the phase as stream number.
fn stream(seed: u64, stream: Stream) -> DemoRng {
    let mut rng = DemoRng::seed_from_u64(seed);
    rng.set_stream(stream as u64);
    rng
}
