/** Word lists for the generator: enough variety to look real, nothing more. */

export const FIRST_NAMES = [
  'James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth', 'William',
  'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Carlos', 'Karen', 'Daniel', 'Lisa',
  'Matthew', 'Nancy', 'Anthony', 'Betty', 'Mark', 'Sandra', 'Wei', 'Ashley', 'Steven', 'Kimberly', 'Andrew',
  'Emily', 'Joshua', 'Donna', 'Kenji', 'Michelle', 'Priya', 'Carol', 'Luis', 'Amanda', 'Omar', 'Melissa', 'Ahmed',
  'Deborah', 'José', 'Stephanie', 'Dmitri', 'Aisha', 'Noah', 'Chloé', 'Liam', 'Zoë', "D'Andre", 'Mei',
] as const;

export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee',
  'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson', 'Walker', 'Young',
  'Nguyen', 'Patel', 'Kim', 'Chen', "O'Brien", 'Müller', 'Kowalski', 'Okafor', 'Haddad', 'Novak', 'Silva',
  'Van der Berg', 'Smith-Jones', 'Yamamoto', 'Ivanova', 'Dubois',
] as const;

export const CITIES = [
  { city: 'Austin', state: 'TX', zip: '787', area: '512', tz: 'America/Chicago', lat: 30.2672, lng: -97.7431, rent: 1450 },
  { city: 'Dallas', state: 'TX', zip: '752', area: '214', tz: 'America/Chicago', lat: 32.7767, lng: -96.797, rent: 1350 },
  { city: 'Denver', state: 'CO', zip: '802', area: '303', tz: 'America/Denver', lat: 39.7392, lng: -104.9903, rent: 1650 },
  { city: 'Phoenix', state: 'AZ', zip: '850', area: '602', tz: 'America/Phoenix', lat: 33.4484, lng: -112.074, rent: 1300 },
  { city: 'Seattle', state: 'WA', zip: '981', area: '206', tz: 'America/Los_Angeles', lat: 47.6062, lng: -122.3321, rent: 2100 },
  { city: 'Atlanta', state: 'GA', zip: '303', area: '404', tz: 'America/New_York', lat: 33.749, lng: -84.388, rent: 1500 },
  { city: 'Chicago', state: 'IL', zip: '606', area: '312', tz: 'America/Chicago', lat: 41.8781, lng: -87.6298, rent: 1750 },
  { city: 'Miami', state: 'FL', zip: '331', area: '305', tz: 'America/New_York', lat: 25.7617, lng: -80.1918, rent: 2200 },
  { city: 'Honolulu', state: 'HI', zip: '968', area: '808', tz: 'Pacific/Honolulu', lat: 21.3069, lng: -157.8583, rent: 2300 },
  { city: 'Anchorage', state: 'AK', zip: '995', area: '907', tz: 'America/Anchorage', lat: 61.2181, lng: -149.9003, rent: 1250 },
] as const;

export const STREETS = ['Main St', 'Oak Ave', 'Maple Dr', 'Cedar Ln', 'Lakeview Blvd', 'Park Pl', 'River Rd', 'Sunset Way', 'Hillcrest Ave', 'Elm St', 'Washington Ave', 'Mill Creek Pkwy'] as const;
export const PROPERTY_WORDS = ['Maple', 'Cedar', 'Willow', 'Summit', 'Harbor', 'Riverside', 'Oak', 'Stonebridge', 'Aspen', 'Lakeshore', 'Magnolia', 'Canyon', 'Meadow', 'Parkview', 'Sierra', 'Juniper'] as const;
export const PROPERTY_KINDS = ['Court', 'Commons', 'Flats', 'Lofts', 'Gardens', 'Terrace', 'Station', 'Heights', 'Place', 'Crossing'] as const;
export const MANAGERS = ['Greystar Residential', 'Lincoln Property Co.', 'Summit Living Partners', 'Cortland Management', 'Harbor Group Living'] as const;
export const AMENITIES = ['Pool', 'Fitness Center', 'Dog Park', 'Clubhouse', 'Package Lockers', 'EV Charging', 'Rooftop Deck', 'Business Center', 'Gated Access', 'Playground'] as const;
export const UNIT_AMENITIES = ['Balcony', 'Washer/Dryer', 'Walk-in Closet', 'Hardwood Floors', 'Granite Counters', 'Fireplace', 'Patio', 'Stainless Appliances'] as const;
export const LEAD_SOURCES = ['Zillow', 'Apartments.com', 'Walk-in', 'Resident Referral', 'Google', 'Facebook', 'Craigslist', 'Property Website'] as const;
export const EMPLOYERS = ['Dell Technologies', 'City Hospital', 'Self-employed', 'State University', 'H-E-B', 'Acme Logistics', '', 'Retired'] as const;
export const CONCESSIONS = ['One month free', '$500 off first month', 'Waived application fee', 'Free parking for 6 months'] as const;
export const NOTES = ['Prefers email contact', 'Has a service animal', 'Requested early move-in', 'Paid deposit by check', 'Parking spot #14 assigned'] as const;
