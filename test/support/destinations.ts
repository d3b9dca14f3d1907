import { applySpec, Destination } from '../../shared/domain/destinations/destination';

/** A webhook destination with the defaults, as PUT /admin/destinations/{id} would store it. */
export function webhookDestination(id: string, url = `https://hooks.example.com/${id}`): Destination {
  return applySpec(id, { url }, undefined, new Date('2025-01-01T00:00:00Z'));
}
