/**
 * A Buildium unit moved to another floor plan takes the plan's counts (source/buildium/client.ts planFieldsOf), against
 * a local server that answers as the wire page says: a plan with more rooms than the wire's names count is sent as the
 * capped name (`NineBedPlus`, `FivePlusBath`), as a unit created with the plan reads, not `NotSet`.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConnector } from '../../source';

const UNIT = {
  Id: 7,
  PropertyId: 3,
  UnitNumber: '101',
  FloorPlanId: 12,
  FloorPlanName: '2x1',
  UnitBedrooms: 'TwoBed',
  UnitBathrooms: 'OneBath',
  UnitSize: 880,
  MaxOccupants: 4,
  MarketRent: 1035.5,
  OccupancyStatus: 'Occupied',
  Description: null,
  Address: { AddressLine1: '1 Main St', AddressLine2: null, AddressLine3: null, City: 'Austin', State: 'TX', PostalCode: '78701', Country: 'US' },
  CreatedDateTime: '2024-01-02T03:04:05Z',
  LastUpdatedDateTime: '2025-06-30T23:59:59Z',
};
const PLANS = [
  { Id: 12, Name: '2x1', Bedrooms: 2, Bathrooms: 1, Size: 880 },
  { Id: 13, Name: 'Mansion', Bedrooms: 12, Bathrooms: 7.5, Size: 9000 },
  { Id: 14, Name: 'Odd', Bedrooms: 3, Bathrooms: 1.25, Size: 1200 },
];

let server: Server;
let base: string;
const puts: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.method === 'GET' && req.url === '/v1/rentals/units/7') return json(200, UNIT);
      if (req.method === 'GET' && req.url?.startsWith('/v1/rentals/3/floorplans')) return json(200, PLANS);
      if (req.method === 'PUT' && req.url === '/v1/rentals/units/7') {
        puts.push(JSON.parse(body) as Record<string, unknown>);
        return json(200, { ...UNIT, Id: 7 });
      }
      json(404, { UserMessage: 'not found' });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('sends a larger plan’s counts as the capped names, and a count the wire cannot name as NotSet', async () => {
  const conn = createConnector({ dialect: 'buildium', base_url: base, client_id: 'id', client_secret: 'secret' });
  await conn.update('unit', '7', { floorplan_id: '13' });
  expect(puts.at(-1)).toMatchObject({ FloorPlanId: 13, UnitBedrooms: 'NineBedPlus', UnitBathrooms: 'FivePlusBath', UnitSize: 9000 });
  await conn.update('unit', '7', { floorplan_id: '14' });
  expect(puts.at(-1)).toMatchObject({ FloorPlanId: 14, UnitBedrooms: 'ThreeBed', UnitBathrooms: 'NotSet', UnitSize: 1200 });
  // What the patch sets wins over the plan.
  await conn.update('unit', '7', { floorplan_id: '13', bedrooms: 4 });
  expect(puts.at(-1)).toMatchObject({ UnitBedrooms: 'FourBed', UnitBathrooms: 'FivePlusBath' });
});
